from __future__ import annotations

from django.apps import AppConfig


class HubSchedulesConfig(AppConfig):
    name = "hub_schedules"
    verbose_name = "Schedules"
