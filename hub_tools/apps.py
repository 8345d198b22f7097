from __future__ import annotations

from django.apps import AppConfig


class HubToolsConfig(AppConfig):
    name = "hub_tools"
    verbose_name = "Tools"
