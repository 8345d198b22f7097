from __future__ import annotations

from django.apps import AppConfig


class HubEventsConfig(AppConfig):
    name = "hub_events"
    verbose_name = "Event log"

    def ready(self) -> None:
        # hub_core publishes; this app keeps the log. Plugging in from here keeps the arrow pointing
        # down: the core never imports the log, the log registers itself with the core.
        from hub_core.events import event_log_install
        from hub_events.services import events_record, events_seal_all

        event_log_install(record=events_record, seal_all=events_seal_all)
