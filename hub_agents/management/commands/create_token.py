from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from hub_agents.audit import CLI
from hub_agents.identity import binding_parse
from hub_agents.models import IdentityPolicy, Network, Role, ToolProfile
from hub_agents.selectors import binding_text
from hub_agents.services import membership_set, token_create, user_get_or_create
from hub_core.errors import HubError


class Command(BaseCommand):
    help = (
        "Create a token and print it once, as the last line. --network NAME gives a network token "
        "(ntok_…); --user USERNAME a user token (utok_…), creating the user, and with --network the "
        "membership, if missing. --profile narrows the tools its MCP connections list and may call; "
        "--alias binds it to the agents it may act as."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--network", metavar="NAME", help="the network, by name")
        parser.add_argument("--user", metavar="USERNAME", help="make a user token for this user")
        parser.add_argument("--role", choices=Role.values, help="the role (default member)")
        parser.add_argument("--name", default="", help="a label for the token, e.g. the agent or script using it")
        parser.add_argument(
            "--profile",
            choices=ToolProfile.values,
            default=ToolProfile.ALL,
            help="the tools its MCP connections list and may call: contract (the 17 contract tools), agent "
            "(contract, open pool, questions, thread), lead (agent, answers, approvals, search) or all (default)",
        )
        parser.add_argument(
            "--alias",
            dest="aliases",
            action="append",
            default=[],
            metavar="ALIAS",
            help="an alias the token acts as, or a pattern such as 'build-*'; repeat it, or separate several "
            "with commas (a node's agents). Left out: unbound, acting as any agent of an open network and "
            "as none of a strict one",
        )

    def handle(
        self,
        *args: Any,
        network: str | None,
        user: str | None,
        role: str | None,
        name: str,
        profile: str,
        aliases: list[str],
        **options: Any,
    ):
        if network is None and user is None:
            raise CommandError("Give --network NAME for a network token, or --user USERNAME for a user token.")
        if user is None and role is None:
            role = Role.MEMBER
        try:
            # Each --alias may list several, separated by commas; checked before any user or membership is made.
            binding = binding_parse(",".join(aliases))
            found = self._network(network) if network is not None else None
            if user is None:
                token, raw = token_create(
                    network=found, role=role, name=name, tool_profile=profile, aliases=binding, by=CLI
                )
            else:
                account = user_get_or_create(username=user)
                if found is not None:
                    membership = membership_set(user=account, network=found, role=role, by=CLI)
                    self.stderr.write(f"{account.get_username()} is {membership.role} in {found.name!r}.")
                elif role is not None:
                    raise CommandError("--role for a user token needs --network: roles belong to memberships.")
                token, raw = token_create(user=account, name=name, tool_profile=profile, aliases=binding, by=CLI)
        except HubError as exc:
            if exc.extra.get("field") == "aliases":
                raise CommandError(f"--alias {exc.error.removeprefix('aliases: ')}.") from None
            raise CommandError(exc.message) from None
        narrowed = f" (tool profile {token.tool_profile})" if token.tool_profile != ToolProfile.ALL else ""
        self.stderr.write(
            f"Token {token.prefix}… created, {binding_text(token.aliases)}{narrowed}; it is shown once, store it now."
        )
        if not token.aliases and found is not None and found.identity_policy == IdentityPolicy.STRICT:
            self.stderr.write(
                f"Network {found.name!r} is strict: an unbound token acts as no agent there, only as itself."
            )
        self.stdout.write(raw)

    @staticmethod
    def _network(name: str) -> Network:
        found = Network.objects.filter(name=name).first()
        if found is None:
            raise CommandError(f"No network named {name!r}; create it first: python manage.py create_network {name}")
        return found
