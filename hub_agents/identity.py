"""Who is speaking: the aliases a token is bound to, and each network's identity policy.

A token may be bound to aliases (ApiToken.aliases: each an alias or a pattern with `*`, "build-*").
Each tool declares which of its arguments names its *caller* (hub_tools.tool.Tool.callers, as a
`Caller`); the arguments that name a *target* (send_task's alias, reassign's new_alias) are not
asked about. Before a service runs, the door asks here whether the caller may be that alias:

| caller                      | open network (the default)   | strict network                          |
|-----------------------------|------------------------------|-----------------------------------------|
| token bound to the alias    | yes                          | yes                                     |
| token bound elsewhere       | no: alias_not_yours          | no: alias_not_yours                     |
| unbound member/owner/admin  | yes (the contract's way)     | no; owners/admins yes as channel members|
| viewer (bound or not)       | no: a viewer is no agent     | no                                      |

Acting as itself (an alias among Actor.names: "token:<name>", "dashboard:<username>") is never
claiming an alias, so it is allowed to every caller.

`from_session` (who others see acting, a `SENDER`) is filled in where it is left out: a token bound
to one alias sends as that alias, an unbound token in a strict network as itself (Actor.names).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from hub_agents import actor_cache
from hub_agents.actors import Actor
from hub_agents.errors import alias_not_yours
from hub_agents.models import ADMIN_ROLES, WRITE_ROLES, IdentityPolicy, Network
from hub_core import validate
from hub_core.errors import HubError, invalid_argument

# How many aliases and patterns one token may be bound to (a node's agents fit in it).
BINDING_MAX = 200


class Speaks(StrEnum):
    AGENT = "agent"  # the agent itself: its status, inbox, completions, claims and questions
    MEMBER = "member"  # a channel member (posts, reads, configures, leaves; search's members-only posts)
    SENDER = "sender"  # from_session: who others see acting


@dataclass(frozen=True)
class Caller:
    """How a tool's argument names its caller. `fill`: left out by a token bound to exactly one
    alias, it is that alias (a SENDER is always filled, by the policy's rule)."""

    speaks: Speaks
    fill: bool = False


AGENT = Caller(Speaks.AGENT)
MEMBER = Caller(Speaks.MEMBER)
MEMBER_FILLED = Caller(Speaks.MEMBER, fill=True)
SENDER = Caller(Speaks.SENDER, fill=True)


# --- bindings ------------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _pattern(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if part == "*" else re.escape(part) for part in re.split(r"(\*)", pattern)))


def binding_matches(binding: Iterable[str], alias: str) -> bool:
    """Whether `alias` is one of the binding's aliases or matches one of its patterns."""
    return any(_pattern(pattern).fullmatch(alias) for pattern in binding)


def binding_single(binding: Sequence[str]) -> str | None:
    """The one alias a binding names, if it names exactly one and no pattern."""
    return binding[0] if len(binding) == 1 and "*" not in binding[0] else None


def binding_parse(value: object) -> list[str]:
    """A binding as given (a list, or text of aliases and patterns separated by commas or lines: an
    alias may hold a space),
    checked: each an alias or a pattern of at most validate.ID_MAX characters, not just `*`s."""
    if value is None or value == "":
        return []
    items = re.split(r"[,\n]", value) if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise invalid_argument("aliases", "must be a list of aliases or patterns such as build-*")
    found: list[str] = []
    for item in (item.strip() for item in items):
        if not item:
            continue
        checked = validate.required_identifier("aliases", item)
        if not checked.strip("*"):
            raise invalid_argument("aliases", f"names {checked!r}, every alias: leave the token unbound instead")
        if checked not in found:
            found.append(checked)
    if len(found) > BINDING_MAX:
        raise invalid_argument("aliases", f"has more than {BINDING_MAX} aliases and patterns ({len(found)})")
    return found


def binding_shown(binding: Sequence[str]) -> str:
    return ", ".join(binding) if binding else "no alias"


# --- policies ------------------------------------------------------------------------------------


def network_policy(network_id: str) -> str:
    """The network's identity policy, from memory while access is unchanged (a saved Network is a
    change of access: hub_agents.actor_cache)."""
    return actor_cache.network_memo(
        network_id,
        "identity_policy",
        lambda: (
            Network.objects.filter(pk=network_id).values_list("identity_policy", flat=True).first()
            or IdentityPolicy.OPEN
        ),
    )


# --- the checks ----------------------------------------------------------------------------------


def refusal(actor: Actor, network_id: str, alias: str, speaks: Speaks) -> HubError | None:
    """Why `actor` may not act as `alias` in the network (None: it may). A network the actor is not
    in is not asked about here: the service refuses it as it always has."""
    role = actor.roles.get(network_id)
    if role is None or alias in actor.names:
        return None  # not its network (the service refuses it), or the caller acting as itself
    if role not in WRITE_ROLES:
        return alias_not_yours(
            f"A viewer acts as no agent: naming {alias!r} gives no inbox, channel membership or members-only "
            "posts. Leave the alias out, or use a token bound to it."
        )
    if actor.aliases:
        if binding_matches(actor.aliases, alias):
            return None
        return alias_not_yours(
            f"This token acts only as {binding_shown(actor.aliases)}, not as {alias!r}: use the token bound to it."
        )
    if network_policy(network_id) != IdentityPolicy.STRICT:
        return None
    if speaks is Speaks.MEMBER and role in ADMIN_ROLES:
        return None  # owners and admins moderate every channel
    return alias_not_yours(
        f"Network {network_id} is strict: only a token bound to {alias!r} acts as it, and this token is bound "
        "to no alias. Ask an owner for a bound token (create_token --alias)."
    )


def speak_as(actor: Actor, network_id: str, alias: str, speaks: Speaks = Speaks.AGENT) -> None:
    """Refuse (alias_not_yours) unless `actor` may act as `alias` in the network."""
    refused = refusal(actor, network_id, alias, speaks)
    if refused is not None:
        raise refused


def speaking_networks(actor: Actor, networks: Sequence[str], alias: str, speaks: Speaks) -> list[str]:
    """The networks of a read where `actor` may act as `alias`; the first refusal if there is none."""
    allowed, refused = [], None
    for network_id in networks:
        why = refusal(actor, network_id, alias, speaks)
        if why is None:
            allowed.append(network_id)
        else:
            refused = refused or why
    if not allowed and refused is not None:
        raise refused
    return allowed


def sender(actor: Actor, networks: Sequence[str], from_session: str | None) -> str | None:
    """The sender a write records (from_session), checked and filled in; None: the service's own
    default (an unbound token in an open network, as the contract has it)."""
    if actor.aliases:
        if from_session is None:
            single = binding_single(actor.aliases)
            if single is None:
                raise invalid_argument(
                    "from_session",
                    f"is required: this token acts as {binding_shown(actor.aliases)}; name the alias acting",
                    kind="required",
                )
            return single
        if not binding_matches(actor.aliases, from_session):
            raise alias_not_yours(
                f"This token acts only as {binding_shown(actor.aliases)}, not as {from_session!r}: leave "
                "from_session out or name one of its aliases."
            )
        return from_session
    strict = [network_id for network_id in networks if network_policy(network_id) == IdentityPolicy.STRICT]
    if not strict:
        return from_session
    if from_session is None:
        return actor.names[0]
    if from_session in actor.names:
        return from_session
    raise alias_not_yours(
        f"Network {strict[0]} is strict: a token bound to no alias acts as itself ({actor.names[0]}), not as "
        f"{from_session!r}. Leave from_session out, or use a token bound to that alias."
    )


def filled(actor: Actor) -> str | None:
    """A caller argument left out by a token bound to exactly one alias: that alias."""
    return binding_single(actor.aliases)
