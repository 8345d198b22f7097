from __future__ import annotations

from django.apps import AppConfig

from hub_core.events import event_log_install


class HubEventsConfig(AppConfig):
    name = "hub_events"
    verbose_name = "Event log"

    def ready(self) -> None:
        # hub_core publishes; this app keeps the log. Plugging in from here keeps the arrow pointing
        # down: the core never imports the log, the log registers itself with the core. (The services
        # import models, which Django allows only once the apps are loaded, hence here.)
        from hub_events.services import events_record, events_seal_leftovers, events_seal_now

        # After commit, the leftovers sealer: an outbox may name a network whose events were rolled
        # back, and then a seal must cost one probe, not a counter row and a lock.
        event_log_install(record=events_record, seal=events_seal_leftovers, seal_now=events_seal_now)
