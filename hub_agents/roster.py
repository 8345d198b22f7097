"""Who a network has, as its agent cards describe it: the network's name and its agents' sessions.

A read like those in selectors.py, scoped the same way (the actor must be able to read the
network, else the same permission_denied as every other read: a network one may not see and one
that does not exist answer alike).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone

from hub_agents.actors import Actor
from hub_agents.models import AgentSession, Network
from hub_agents.results import Row
from hub_agents.selectors import session_row, with_effective_status
from hub_core.errors import HubError


@dataclass(frozen=True)
class Roster:
    network_id: str
    name: str
    sessions: list[Row]  # session_row()s, by alias: one per alias (report_status keeps one)


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
    name = Network.objects.filter(pk=network).values_list("name", flat=True).first() or network
    return Roster(network_id=network, name=name, sessions=rows)
