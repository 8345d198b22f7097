from __future__ import annotations

from django.apps import AppConfig


class HubChannelsConfig(AppConfig):
    name = "hub_channels"
    verbose_name = "Channels"
