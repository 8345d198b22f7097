from django.apps import AppConfig


class HubEventsConfig(AppConfig):
    name = "hub_events"
    verbose_name = "Event log"
