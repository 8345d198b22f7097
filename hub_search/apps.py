from __future__ import annotations

from django.apps import AppConfig


class HubSearchConfig(AppConfig):
    name = "hub_search"
    verbose_name = "Search"

    def ready(self) -> None:
        from hub_search import sources

        sources.connect()  # the index follows the writes (hub_search.sources)
