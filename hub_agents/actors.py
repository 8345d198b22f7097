"""The caller of a service: who it is, and what each of its networks lets it do."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hub_agents.models import ADMIN_ROLES, WRITE_ROLES, ToolProfile
from hub_core.errors import HubError, permission_denied

# How an operator's dashboard writes name their sender (from_session): "dashboard:<username>".
DASHBOARD_SENDER = "dashboard:"


@dataclass(frozen=True)
class Actor:
    # Shown in task events and audit rows, e.g. "ntok_AbCd1234 (ci-runner)" or "user:alice".
    label: str
    # Stable identity of the caller for idempotency keys: the same token, the same caller.
    key: str
    # network id -> role, for every network the actor may see.
    roles: Mapping[str, str]
    # True for a network token: it acts in exactly one network, whatever network_id says.
    network_bound: bool
    user_id: int | None = None
    # The tools its MCP connections list and may call (its token's; a dashboard session has them all).
    tool_profile: str = ToolProfile.ALL
    # The aliases its token is bound to, each an alias or a pattern (hub_agents.identity); () unbound.
    aliases: tuple[str, ...] = ()
    # What it is called when it acts as itself (an unbound token in a strict network): its from_session
    # is the first of these, and may be any of them.
    names: tuple[str, ...] = ()

    @property
    def token_id(self) -> int | None:
        """The id of the token it authenticated with; None for a signed-in session ("user:<id>")."""
        kind, _, pk = self.key.partition(":")
        return int(pk) if kind == "token" and pk.isdigit() else None

    @property
    def person(self) -> str:
        """Who is behind the call: the user (through any session or user token), or the network token."""
        return f"user:{self.user_id}" if self.user_id is not None else self.key

    def readable_networks(self, network_id: str | None = None) -> list[str]:
        """The networks a read covers: all of the actor's, or the one asked for if it is one of them."""
        if network_id is None:
            return list(self.roles)
        self._check_member(network_id)
        return [network_id]

    def writable_networks(self, network_id: str | None = None) -> list[str]:
        """The readable networks (readable_networks) where the actor may also write."""
        return [network for network in self.readable_networks(network_id) if self.can_write(network)]

    def writable_network(self, network_id: str | None = None) -> str:
        """The network a write goes to, chosen from `network_id` where the actor has several."""
        if self.network_bound:
            (bound,) = self.roles
            if network_id not in (None, bound):
                raise permission_denied(f"This token is bound to network {bound}; drop network_id or pass {bound}.")
            network_id = bound
        elif network_id is None:
            if len(self.roles) != 1:
                raise HubError(
                    "network_required",
                    f"You belong to several networks; pass network_id (one of: {', '.join(sorted(self.roles))})."
                    if self.roles
                    else "You belong to no network yet; ask a network owner to add you.",
                    status=400 if self.roles else 403,
                )
            (network_id,) = self.roles
        self.check_write(network_id)
        return network_id

    def check_write(self, network_id: str) -> None:
        self._check_member(network_id)
        if self.roles[network_id] not in WRITE_ROLES:
            raise permission_denied(
                f"Your role in network {network_id} is {self.roles[network_id]}: it may read but not write."
            )

    def can_write(self, network_id: str) -> bool:
        return self.roles.get(network_id) in WRITE_ROLES

    def can_administer(self, network_id: str) -> bool:
        return self.roles.get(network_id) in ADMIN_ROLES

    def check_administer(self, network_id: str, *, changes: str) -> None:
        """Owners and admins only (a viewer hears what every write tells a viewer first)."""
        self.check_write(network_id)
        if not self.can_administer(network_id):
            raise permission_denied(f"Only the owners and admins of network {network_id} change its {changes}.")

    def _check_member(self, network_id: str) -> None:
        if network_id not in self.roles:
            raise permission_denied(f"You are not a member of network {network_id!r}.")
