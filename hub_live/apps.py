from __future__ import annotations

from django.apps import AppConfig


class HubLiveConfig(AppConfig):
    name = "hub_live"
    verbose_name = "Live streams"
