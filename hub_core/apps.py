from __future__ import annotations

from django.apps import AppConfig


class HubCoreConfig(AppConfig):
    name = "hub_core"
    verbose_name = "Core"

    def ready(self) -> None:
        # The catalogues the apps declare into (each app's events.py): gathered once every app is
        # loaded, so the core names no app.
        from hub_core.events import events_discover

        events_discover()
