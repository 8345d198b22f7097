"""Reads about who is there, already scoped to what the actor may see."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import connections
from django.db.models import Case, CharField, Count, F, Func, Max, Q, QuerySet, Value, When
from django.utils import timezone

from hub_agents.actors import Actor
from hub_agents.identity import binding_matches
from hub_agents.models import (
    ADMIN_ROLES,
    WRITE_ROLES,
    AgentSession,
    ApiToken,
    AuditEntry,
    Membership,
    Network,
    Node,
    NodeCommand,
    Role,
    SessionStatus,
)
from hub_agents.results import SessionListing
from hub_core.cursor import Position
from hub_core.cursor import encode as encode_cursor
from hub_core.errors import HubError, permission_denied
from hub_core.formats import timestamp

SESSION_COLUMNS = (
    "resume_id", "alias", "status", "task", "output", "score", "progress", "server", "hostname",
    "agent", "project_dir", "version", "tmux_name", "node_id", "session_id", "config_path",
    "channels", "model",
    # Beyond the contract (new keys only): what it can do, and how much of the open pool it takes on.
    "skills", "max_concurrent",
)  # fmt: skip


def offline_cutoff(now: datetime) -> datetime:
    return now - timedelta(seconds=settings.COMMHUB_OFFLINE_AFTER_SECONDS)


def network_landing(*, user: AbstractBaseUser) -> str | None:
    """The network the user's dashboard opens on: the one they chose last; never having chosen, the
    one whose agents reported most recently (where the work is); else the first by name."""
    memberships = Membership.objects.filter(user=user)
    chosen = memberships.filter(chosen_at__isnull=False).order_by("-chosen_at").values_list("network_id", flat=True)
    if landing := chosen.first():
        return landing
    busiest = (
        memberships.annotate(seen=Max("network__sessions__last_seen_at"))
        .filter(seen__isnull=False)
        .order_by("-seen", "network__name")
        .values_list("network_id", flat=True)
    )
    return busiest.first() or memberships.order_by("network__name").values_list("network_id", flat=True).first()


def status_of_sql(network: str = "%s") -> str:
    """session_status_of as one subquery, for a statement a write makes anyway (send_task's read
    ahead, send_reply's lock). Its parameters: the offline cutoff (a stamped time), the network id
    unless `network` names the outer statement's column, the alias."""
    return (
        f"SELECT CASE WHEN last_seen_at < %s THEN '{SessionStatus.OFFLINE.value}' ELSE status END"
        f" FROM {AgentSession._meta.db_table} WHERE network_id = {network} AND alias = %s"
        " ORDER BY last_seen_at DESC LIMIT 1"
    )


def with_effective_status(sessions: QuerySet[AgentSession], now: datetime) -> QuerySet[AgentSession]:
    """Annotate `effective_status`: what the agent said, or offline once its heartbeat is stale."""
    return sessions.annotate(
        effective_status=Case(
            When(last_seen_at__lt=offline_cutoff(now), then=Value(SessionStatus.OFFLINE.value)),
            default=F("status"),
            output_field=CharField(),
        )
    )


def session_row(session: AgentSession) -> dict[str, Any]:
    row = {column: getattr(session, column) for column in SESSION_COLUMNS}
    row["status"] = getattr(session, "effective_status", session.status)
    row["skills"] = session.skills or []
    row["network_id"] = session.network_id
    row["created_at"] = timestamp(session.created_at)
    row["last_seen_at"] = timestamp(session.last_seen_at)
    return row


def session_status_of(*, network_id: str, alias: str, now: datetime) -> str | None:
    """The alias's status as everyone reads it, or None if no agent has reported as it."""
    sessions = AgentSession.objects.filter(network_id=network_id, alias=alias).order_by("-last_seen_at")
    return with_effective_status(sessions, now).values_list("effective_status", flat=True).first()


# The order get_all_status lists sessions in, and so the position a page's cursor holds.
SESSION_ORDER = ("network_id", "alias", "id")
SESSION_CURSOR_SHAPE = (str, str, int)


class _Stamp(Func):
    """A timestamp column as hub_core.formats.timestamp writes it (`2026-04-12T10:00:00.123Z`), written by
    the database: the rows of get_all_status come out as text, without a datetime per cell (parsing
    and formatting 20,000 of them took most of a 10,000-session listing's time). Milliseconds are
    cut, not rounded, as isoformat's are. SQLite holds what Django wrote, UTC as `YYYY-MM-DD
    HH:MM:SS[.ffffff]`: the text is cut to shape (its strftime rounds to the millisecond)."""

    output_field = CharField()
    template = "to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

    sqlite_template = (
        "replace(substr(%(expressions)s, 1, 19), ' ', 'T') || '.' || CASE WHEN substr(%(expressions)s, 20, 1) = '.'"
        " THEN substr(substr(%(expressions)s, 21, 3) || '00', 1, 3) ELSE '000' END || 'Z'"
    )

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template=self.sqlite_template, **extra)


# A listed session: session_row's keys, in its order, each selected as the row shows it.
_LISTED = dict(
    zip(
        (*SESSION_COLUMNS, "network_id", "created_at", "last_seen_at"),
        (*("effective_status" if c == "status" else c for c in SESSION_COLUMNS), "network_id", "created", "seen"),
        strict=True,
    )
)
# Then the id, which SESSION_ORDER ends with: a page's last row says where the next page starts.
_LISTED_FIELDS = (*_LISTED.values(), "id")
_SKILLS = _LISTED_FIELDS.index("skills")
_ORDER_AT = tuple(_LISTED_FIELDS.index(field) for field in SESSION_ORDER)


def session_list(
    *,
    actor: Actor,
    filter_status: str | None = None,
    filter_server: str | None = None,
    network_id: str | None = None,
    limit: int | None = None,
    cursor: Position | None = None,
    alias: str | None = None,
) -> SessionListing:
    """get_all_status: every session in scope, and counts by status over the whole scope.

    Beyond the contract: `limit` lists at most that many, from after `cursor` (a position in
    SESSION_ORDER), and says where the next page starts; `alias` lists that alias's sessions only
    (the dashboard's one-card update).

    The rows are session_row's, read as tuples with their timestamps already text (_Stamp): a
    whole fleet's listing is 10,000 of them."""
    networks = actor.readable_networks(network_id)
    scope = with_effective_status(AgentSession.objects.filter(network_id__in=networks), timezone.now())

    sessions = scope
    if filter_status is not None:
        sessions = sessions.filter(effective_status=filter_status)
    if filter_server is not None:
        sessions = sessions.filter(server=filter_server)
    if alias is not None:
        sessions = sessions.filter(alias=alias)
    if cursor is not None:
        last_network, last_alias, last_id = cursor
        sessions = sessions.filter(
            Q(network_id__gt=last_network)
            | Q(network_id=last_network, alias__gt=last_alias)
            | Q(network_id=last_network, alias=last_alias, id__gt=last_id)
        )
    listed = sessions.annotate(created=_Stamp("created_at"), seen=_Stamp("last_seen_at"))
    listed = listed.order_by(*SESSION_ORDER).values_list(*_LISTED_FIELDS)
    page = _fetched(listed[: limit + 1] if limit is not None else listed)
    more = limit is not None and len(page) > limit
    page = page[:limit] if limit is not None else page
    summary = scope.values("effective_status").annotate(count=Count("id")).order_by("-count", "effective_status")
    return SessionListing(
        sessions=_listed_rows(page, using=listed.db),
        summary=[{"status": row["effective_status"], "count": row["count"]} for row in summary],
        paged=limit is not None or cursor is not None,
        next_cursor=encode_cursor(tuple(page[-1][at] for at in _ORDER_AT)) if more else None,
    )


def _fetched(rows: QuerySet[Any]) -> list[tuple[Any, ...]]:
    """The queryset's statement, run on its own cursor: its rows as the driver reads them, without
    the ORM's per-row conversions (a tenth of a whole fleet's listing); _listed_rows converts the one
    column that needs it."""
    sql, params = rows.query.get_compiler(rows.db).as_sql()
    with connections[rows.db].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _listed_rows(page: list[tuple[Any, ...]], *, using: str) -> list[dict[str, Any]]:
    keys = tuple(_LISTED)  # the row's trailing id (the cursor's) has no key: zip leaves it out
    rows = [dict(zip(keys, values)) for values in page]  # noqa: B905
    skills = AgentSession._meta.get_field("skills")
    for values, row in zip(page, rows, strict=True):
        said = values[_SKILLS]  # JSON text, or null: never said
        # As session_row: no skills said reads as none.
        row["skills"] = (said is not None and skills.from_db_value(said, None, connections[using])) or []
    return rows


NODE_COLUMNS = (
    "node_id", "node_name", "host", "os", "agent_version", "runtimes", "agents", "slots_total", "slots_used",
    "model", "runtime",
)  # fmt: skip


def node_row(node: Node, *, now: datetime) -> dict[str, Any]:
    """A node as list_nodes and the fleet show it: what it said, how full it is, and whether it is
    still there (`online`: seen within COMMHUB_OFFLINE_AFTER_SECONDS, the threshold agents go offline
    after; it is seen when it reports itself and when an agent reports with its node_id)."""
    row = {column: getattr(node, column) for column in NODE_COLUMNS}
    row["runtimes"] = node.runtimes or []
    row["agents"] = node.agents or []
    row["agent_count"] = len(row["agents"])
    row["slots_free"] = (
        max(node.slots_total - node.slots_used, 0)
        if node.slots_total is not None and node.slots_used is not None
        else None
    )
    row["online"] = node.last_seen_at >= offline_cutoff(now)
    row["network_id"] = node.network_id
    row["created_at"] = timestamp(node.created_at)
    row["reported_at"] = timestamp(node.reported_at) if node.reported_at else None
    row["last_seen_at"] = timestamp(node.last_seen_at)
    return row


def node_list(*, actor: Actor, network_id: str | None = None, node_ids: Iterable[str] | None = None) -> list[dict]:
    """list_nodes: the machines the actor's networks' agents run on, by network then name (a node
    that never said its name: by its id). `node_ids`: only those (the fleet's cards)."""
    nodes = Node.objects.filter(network_id__in=actor.readable_networks(network_id))
    if node_ids is not None:
        nodes = nodes.filter(node_id__in=set(node_ids))
    now = timezone.now()
    rows = [node_row(node, now=now) for node in nodes]
    rows.sort(key=lambda row: (row["network_id"], (row["node_name"] or row["node_id"]).casefold(), row["node_id"]))
    return rows


def session_aliases(*, actor: Actor, network_id: str) -> list[str]:
    """The aliases that have reported in the network, sorted (the dashboard's dispatch suggestions)."""
    (network,) = actor.readable_networks(network_id)
    return sorted(set(AgentSession.objects.filter(network_id=network).values_list("alias", flat=True)))


def audit_list(*, actor: Actor, network_id: str) -> QuerySet[AuditEntry]:
    """The network's audit log, newest first: for its owners and admins only."""
    if not actor.can_administer(network_id):
        raise permission_denied(f"Only owners and admins of network {network_id} may read its audit log.")
    return AuditEntry.objects.filter(network_id=network_id).order_by("-created_at", "-id")


def token_identity(*, actor: Actor) -> dict[str, Any]:
    """Who the caller is (GET /api/v1/whoami): its label, its kind (a network token, a user token or a
    signed-in user's session), the names it acts as itself by, the aliases it is bound to ([]: unbound,
    hub_agents.identity) and each of its networks with its role there and that network's identity
    policy, by name. A node asks it before it starts the agents of its config (commhub-agent node)."""
    # Actor.key is "token:<id>" for either kind of token, "user:<id>" for a session.
    kind = "network" if actor.network_bound else "user" if actor.key.startswith("token:") else "session"
    networks = Network.objects.filter(pk__in=list(actor.roles)).order_by("name", "id")
    return {
        "label": actor.label,
        "kind": kind,
        "names": list(actor.names),
        "aliases": list(actor.aliases),
        "networks": [
            {
                "network_id": network_id,
                "name": name,
                "role": actor.roles[network_id],
                "identity_policy": policy,
            }
            for network_id, name, policy in networks.values_list("id", "name", "identity_policy")
        ],
    }


def agents_by_network_status(*, now: datetime | None = None) -> list[tuple[str, str, int]]:
    """(network_id, status, sessions) over every network (/metrics): each session's status as
    everyone reads it (offline once its heartbeat is stale); statuses with none left out."""
    sessions = with_effective_status(AgentSession.objects.all(), now or timezone.now())
    counts = sessions.values("network_id", "effective_status").annotate(count=Count("id"))
    return [
        (row["network_id"], row["effective_status"], row["count"])
        for row in counts.order_by("network_id", "effective_status")
    ]


# --- tokens and who they may act as (the Tokens page, the admin, create_token) -------------------


def binding_text(aliases: Sequence[str]) -> str:
    """A token's binding as operators read it: "bound to a-coder, build-*", or "unbound"."""
    return f"bound to {', '.join(aliases)}" if aliases else "unbound"


@dataclass(frozen=True)
class TokenRow:
    """A token as its network's owners and admins see it; never its digest."""

    id: int
    kind: str  # ApiToken.Kind: a network token, or a member's user token
    name: str
    prefix: str
    role: str  # a network token's role; a user token's: its user's role in the network
    username: str  # a user token's user ("" for a network token)
    aliases: tuple[str, ...]
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None
    revocable: bool  # by this caller, from this network's page (a network token whose role it may give)

    @property
    def binding(self) -> str:
        return binding_text(self.aliases)

    @property
    def acts(self) -> bool:
        """Whether it may act as an agent at all now: live, with a role that writes."""
        return self.revoked_at is None and self.role in WRITE_ROLES


def _admins_only(network_id: str) -> HubError:
    return permission_denied(f"Only the owners and admins of network {network_id} see and manage its tokens.")


def token_roles_grantable(*, actor: Actor, network_id: str) -> list[str]:
    """The roles `actor` may give a new network token of the network, or take away by revoking one:
    an owner every role, an admin every role but owner; members and viewers none (permission_denied)."""
    role = actor.roles.get(network_id)
    if role not in ADMIN_ROLES:
        raise _admins_only(network_id)
    return [value for value in Role.values if role == Role.OWNER or value != Role.OWNER]


def token_list(*, actor: Actor, network_id: str) -> list[TokenRow]:
    """The tokens that act in the network: its network tokens, and the user tokens of its members
    (with the member's role there). Live ones first, each part newest first. Owners and admins only."""
    grantable = set(token_roles_grantable(actor=actor, network_id=network_id))
    members = dict(
        Membership.objects.filter(network_id=network_id, user__is_active=True).values_list("user_id", "role")
    )
    tokens = ApiToken.objects.filter(Q(network_id=network_id) | Q(kind=ApiToken.Kind.USER, user_id__in=list(members)))
    rows = [
        TokenRow(
            id=token.pk,
            kind=token.kind,
            name=token.name,
            prefix=token.prefix,
            role=token.role if token.network_id else members[token.user_id],
            username=token.user.get_username() if token.user_id else "",
            aliases=tuple(token.aliases),
            created_at=token.created_at,
            last_used_at=token.last_used_at,
            revoked_at=token.revoked_at,
            revocable=bool(token.network_id) and token.revoked_at is None and token.role in grantable,
        )
        for token in tokens.select_related("user").order_by("-created_at", "-pk")
    ]
    return sorted(rows, key=lambda row: row.revoked_at is not None)  # stable: newest first within each part


def token_revocable(*, actor: Actor, network_id: str, token_id: int) -> ApiToken | None:
    """The network's live network token `token_id`, if `actor` may revoke it from the network's page;
    None if there is no such token. A user token is not: it acts in each of its user's networks."""
    grantable = token_roles_grantable(actor=actor, network_id=network_id)
    return ApiToken.objects.filter(
        pk=token_id, network_id=network_id, revoked_at__isnull=True, role__in=grantable
    ).first()


@dataclass(frozen=True)
class ActedAs:
    """An alias whose session was last reported (report_status) through a token."""

    alias: str
    last_seen_at: datetime
    covered: bool  # a live bound token acts as it already: that is the token to give its agent


@dataclass(frozen=True)
class TokenActing:
    """A live unbound token with a role that writes, and the aliases reported through it."""

    token: TokenRow
    aliases: list[ActedAs]  # by alias

    @property
    def last_reported_at(self) -> datetime:
        return max(acted.last_seen_at for acted in self.aliases)


@dataclass(frozen=True)
class LosingAccess:
    """What switching a network to the strict identity policy takes away (hub_agents.identity).

    A strict network refuses a token bound to no alias only when it acts as an agent: it still
    dispatches, reads and operates as itself (an owner's or admin's still acts as a channel member).
    Each session records the token its last report came through, so of the live unbound tokens with
    a role that writes, `tokens` are those agents reported through, with those agents' aliases (the
    tokens reported through most recently first), and `themselves` the others, most recently used
    first (one never used last): they lose no report they made. The hub records reports only: a call
    naming an alias without reporting as it (a user token's get_inbox as a-coder) is not in either.
    `agents` are the aliases that have reported in the network that no live bound token may act as:
    until one is made, nothing can report as them. `unattributed`: the aliases whose last report
    names no token (made before the hub recorded it): their next report says which."""

    tokens: list[TokenActing]
    themselves: list[TokenRow]
    agents: list[str]
    unattributed: list[str]


def tokens_losing_access(*, actor: Actor, network_id: str) -> LosingAccess:
    rows = [row for row in token_list(actor=actor, network_id=network_id) if row.acts]
    bindings = [row.aliases for row in rows if row.aliases]
    sessions = AgentSession.objects.filter(network_id=network_id).values_list("alias", "token_id", "last_seen_at")
    covered: dict[str, bool] = {}
    reported: dict[int | None, dict[str, ActedAs]] = {}  # token id -> alias -> its latest report
    for alias, token_id, last_seen_at in sessions.order_by("alias", "last_seen_at"):
        if alias not in covered:
            covered[alias] = any(binding_matches(binding, alias) for binding in bindings)
        reported.setdefault(token_id, {})[alias] = ActedAs(alias, last_seen_at, covered[alias])
    unbound = [row for row in rows if not row.aliases]
    unbound.sort(key=lambda row: row.last_used_at or datetime.min.replace(tzinfo=UTC), reverse=True)
    acting = [TokenActing(row, list(reported[row.id].values())) for row in unbound if row.id in reported]
    acting.sort(key=lambda acted: acted.last_reported_at, reverse=True)
    return LosingAccess(
        tokens=acting,
        themselves=[row for row in unbound if row.id not in reported],
        agents=[alias for alias, bound in covered.items() if not bound],
        unattributed=sorted(reported.get(None, {})),
    )


def command_row(command: NodeCommand) -> dict[str, Any]:
    """A command to a node as node_command, node_command_ack and node_commands answer it."""
    return {
        "command_id": command.command_id,
        "network_id": command.network_id,
        "node_id": command.node.node_id,
        "kind": command.kind,
        "alias": command.alias,
        "task_id": command.task_id,
        "value": command.value,
        "status": command.status,
        "reason": command.reason,
        "lines": command.lines,
        "sent_by": command.sent_by,
        "created_at": timestamp(command.created_at),
        "expires_at": timestamp(command.expires_at),
        "answered_at": timestamp(command.answered_at) if command.answered_at else None,
    }


def node_command_list(
    *,
    actor: Actor,
    network_id: str | None = None,
    node_id: str | None = None,
    command_id: str | None = None,
    limit: int = 50,
) -> list[dict[str, Any]]:
    """node_commands: the commands sent to the nodes of the actor's networks, newest first (a node's,
    or one by its id)."""
    commands = NodeCommand.objects.filter(network_id__in=actor.readable_networks(network_id)).select_related("node")
    if node_id is not None:
        commands = commands.filter(node__node_id=node_id)
    if command_id is not None:
        commands = commands.filter(command_id=command_id)
    return [command_row(command) for command in commands.order_by("-created_at", "-id")[:limit]]
