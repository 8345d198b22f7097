from __future__ import annotations

from django.apps import AppConfig


class HubFleetConfig(AppConfig):
    name = "hub_fleet"
    verbose_name = "Fleet"
