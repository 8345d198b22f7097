from __future__ import annotations

from django.apps import AppConfig


class HubSearchConfig(AppConfig):
    name = "hub_search"
    verbose_name = "Search"
