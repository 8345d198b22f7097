from __future__ import annotations

from django.apps import AppConfig


class HubWebhooksConfig(AppConfig):
    name = "hub_webhooks"
    verbose_name = "Outbound webhooks"
