"""Which agents of node.toml the node's token may act as, asked of the hub (GET /api/v1/whoami) at
start and on each reload, so a token that cannot serve them is refused with a line the operator can
act on, before any task is taken, instead of by every call the hub would refuse one by one.

The hub's rule (hub_agents/identity.py), as it applies to a node:

- a token bound to aliases (a list, or patterns such as "build-*") acts only as those: every agent
  of the config must be one of them (a node's token: `create_token --network N --alias a,b,c`);
- an unbound token acts as any alias in an open network, and as none in a strict one;
- a viewer acts as no agent.

A hub older than bindings has no whoami (404): the node goes on as before, unchecked.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from commhub_agent.hub import Hub
from commhub_agent.node.config import NodeConfig, toml_key
from commhub_agent.node.runtime import ConfigError

TOKEN_KEY = "$COMMHUB_TOKEN"  # the key a refusal of the token itself is reported under (not a config key)
WRITE_ROLES = frozenset({"owner", "admin", "member"})  # hub_agents/models.py WRITE_ROLES
STRICT = "strict"  # hub_agents/models.py IdentityPolicy.STRICT


@dataclass(frozen=True)
class Network:
    network_id: str
    name: str
    role: str
    identity_policy: str


@dataclass(frozen=True)
class TokenIdentity:
    """The node's token as the hub describes it."""

    label: str
    aliases: tuple[str, ...]  # () unbound
    networks: tuple[Network, ...]

    @classmethod
    def from_answer(cls, answer: Mapping[str, Any]) -> TokenIdentity:
        return cls(
            label=str(answer.get("label") or "the node's token"),
            aliases=tuple(str(alias) for alias in answer.get("aliases") or ()),
            networks=tuple(
                Network(
                    network_id=str(row.get("network_id", "")),
                    name=str(row.get("name") or row.get("network_id", "")),
                    role=str(row.get("role", "")),
                    identity_policy=str(row.get("identity_policy", "open")),
                )
                for row in answer.get("networks") or ()
            ),
        )

    @property
    def shown(self) -> str:
        return ", ".join(self.aliases) if self.aliases else "no alias"


async def ask_identity(hub: Hub) -> TokenIdentity | None:
    """Who the hub says the token is; None from a hub without whoami. Raises HubUnavailable, HubRefused."""
    answer = await hub.whoami()
    return None if answer is None else TokenIdentity.from_answer(answer)


# Mirrors hub_agents.identity._pattern and binding_matches (this package never imports the hub): an
# alias matches a binding when it is one of its aliases, or matches one of its patterns, where each `*`
# stands for any text (empty too) and every other character for itself; the whole alias must match.
@lru_cache(maxsize=1024)
def _pattern(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if part == "*" else re.escape(part) for part in re.split(r"(\*)", pattern)))


def binding_matches(binding: Iterable[str], alias: str) -> bool:
    """Whether `alias` is one of the binding's aliases or matches one of its patterns."""
    return any(_pattern(pattern).fullmatch(alias) for pattern in binding)


def identity_refusals(identity: TokenIdentity | None, config: NodeConfig) -> list[ConfigError]:
    """Why the token cannot serve the config: one ConfigError per agent outside its binding (key
    `agents.<alias>`), or one for the token itself (key TOKEN_KEY). [] when it can, or when the hub
    did not say (None: a hub without whoami)."""
    if identity is None:
        return []
    aliases = list(config.agents)
    command = _create_token(identity, config, aliases)
    writable = [network for network in identity.networks if network.role in WRITE_ROLES]
    if identity.networks and not writable:
        network = identity.networks[0]
        return [
            ConfigError(
                TOKEN_KEY,
                f"this token ({identity.label}) is a {network.role} in network {network.name}: a viewer acts as "
                f"no agent. Give the node a member's token bound to its agents: {command}",
            )
        ]
    if identity.aliases:
        return [
            ConfigError(
                f"agents.{toml_key(alias)}",
                f"the node's token ({identity.label}) acts only as {identity.shown}, not as {alias!r}: bind the "
                f"node's token to every agent of this config ({command}), or remove this agent",
            )
            for alias in aliases
            if not binding_matches(identity.aliases, alias)
        ]
    strict = [network for network in writable if network.identity_policy == STRICT]
    if strict:
        return [
            ConfigError(
                TOKEN_KEY,
                f"network {strict[0].name} is strict: only a token bound to an alias acts as it, and this "
                f"token ({identity.label}) is bound to no alias. Create the node's token with --alias: {command}",
            )
        ]
    return []


def _create_token(identity: TokenIdentity, config: NodeConfig, aliases: list[str]) -> str:
    """The command that makes the token this config needs, with the hub's own management command."""
    network = identity.networks[0].name if len(identity.networks) == 1 else "NETWORK"
    return (
        f"python manage.py create_token --network {shlex.quote(network)} --name {shlex.quote(config.name)} "
        f"--alias {shlex.quote(','.join(aliases))}"
    )
