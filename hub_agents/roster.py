"""Who a network has, as its agent cards describe it: the network's name and its agents' sessions.

A read like those in selectors.py, scoped the same way (the actor must be able to read the
network, else the same permission_denied as every other read: a network one may not see and one
that does not exist answer alike).

And whether an alias is bound (hub_agents.identity): whether a live token that may act in the
network is bound to it, as the network's identity policy asks of whoever acts as it when strict.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q
from django.utils import timezone

from hub_agents.actors import Actor
from hub_agents.identity import binding_matches
from hub_agents.models import WRITE_ROLES, AgentSession, ApiToken, IdentityPolicy, Network
from hub_agents.results import Row
from hub_agents.selectors import session_row, with_effective_status
from hub_core.errors import HubError


@dataclass(frozen=True)
class Roster:
    network_id: str
    name: str
    sessions: list[Row]  # session_row()s, by alias: one per alias (report_status keeps one)
    identity_policy: str  # IdentityPolicy


def network_roster(*, actor: Actor, network_id: str, alias: str | None = None) -> Roster:
    """The network's agents (only `alias` if given: HubError agent_not_found if it never reported)."""
    (network,) = actor.readable_networks(network_id)
    sessions = AgentSession.objects.filter(network_id=network)
    if alias is not None:
        sessions = sessions.filter(alias=alias)
    rows = [session_row(session) for session in with_effective_status(sessions, timezone.now()).order_by("alias")]
    if alias is not None and not rows:
        raise HubError(
            "agent_not_found",
            f"No agent {alias!r} has reported in network {network}; get_all_status lists those that have.",
            error="agent not found",
            status=404,
        )
    found = Network.objects.filter(pk=network).values_list("name", "identity_policy").first()
    name, policy = found or (network, IdentityPolicy.OPEN)
    return Roster(network_id=network, name=name, sessions=rows, identity_policy=policy)


def alias_bound(*, network_id: str, alias: str) -> bool:
    """Whether a live token that may act as an agent in the network is bound to `alias`: one of the
    network's own tokens with a writing role, or a user token of an active user who has one there
    (a viewer's token acts as no agent, bound or not). Not revoked: a revoked token binds nothing."""
    bindings = (
        ApiToken.objects.filter(revoked_at__isnull=True)
        .filter(
            Q(network_id=network_id, role__in=WRITE_ROLES)
            | Q(
                user__is_active=True,
                user__hub_memberships__network_id=network_id,
                user__hub_memberships__role__in=WRITE_ROLES,
            )
        )
        .values_list("aliases", flat=True)
    )
    return any(binding_matches(binding, alias) for binding in bindings if binding)
