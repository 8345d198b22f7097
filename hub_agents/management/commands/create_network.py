from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from hub_agents.audit import CLI
from hub_agents.services import network_create
from hub_core.errors import HubError


class Command(BaseCommand):
    help = "Create the network NAME if it does not exist; prints its id (net_…) as the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")

    def handle(self, *args: Any, name: str, **options: Any) -> None:
        try:
            network, created = network_create(name=name, by=CLI)
        except HubError as exc:
            raise CommandError(exc.message) from None
        self.stderr.write(f"{'Created' if created else 'Found'} network {network.name!r}.")
        self.stdout.write(network.id)
