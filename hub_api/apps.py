from __future__ import annotations

from django.apps import AppConfig


class HubApiConfig(AppConfig):
    name = "hub_api"
    verbose_name = "REST API"
