from __future__ import annotations

from django.apps import AppConfig


class HubCoreConfig(AppConfig):
    name = "hub_core"
    verbose_name = "Core"
