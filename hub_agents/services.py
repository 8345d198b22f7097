"""Every write about who is there: networks, members, tokens, agent sessions and nodes."""

from __future__ import annotations

from datetime import datetime, timedelta
from importlib import import_module
from types import SimpleNamespace
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user, get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from hub_agents import actor_cache, identity, limits
from hub_agents.actors import DASHBOARD_SENDER, Actor
from hub_agents.audit import SYSTEM, audit_record
from hub_agents.events import NodeCommandSent, NodeCommandUpdated
from hub_agents.models import (
    COMMAND_NEEDS,
    COMMAND_TRANSITIONS,
    AgentSession,
    ApiToken,
    AuditEntry,
    CommandKind,
    CommandStatus,
    IdentityPolicy,
    Membership,
    Network,
    Node,
    NodeCommand,
    Role,
    SessionStatus,
    ToolProfile,
)
from hub_agents.selectors import offline_cutoff
from hub_core import logcontext, validate
from hub_core.errors import HubError, invalid_argument, permission_denied
from hub_core.events import EventType, HubEvent, publish, sealed_atomic
from hub_core.sql import update

LAST_USED_RESOLUTION = timedelta(minutes=1)  # at most one last-used write per token a minute


@transaction.atomic
def network_create(*, name: str, by: str = SYSTEM) -> tuple[Network, bool]:
    """The network with this name, created if missing; the flag says whether it was created."""
    name = validate.required_identifier("name", name)
    network, created = Network.objects.get_or_create(name=name)
    if created:
        audit_record(network_id=network.pk, action=AuditEntry.Action.NETWORK_CREATED, actor=by, target=network.name)
    return network, created


@transaction.atomic
def network_delete(*, network: Network, by: str) -> None:
    """Delete the network and everything in it (members, tokens, sessions, tasks); the audit row stays."""
    network = Network.objects.select_for_update().filter(pk=network.pk).first()
    if network is None:
        return
    audit_record(
        network_id=network.pk,
        action=AuditEntry.Action.NETWORK_DELETED,
        actor=by,
        target=network.name,
        tasks=network.tasks.count(),
        members=network.memberships.count(),
    )
    network.delete()


@transaction.atomic
def network_policy_set(*, network: Network, policy: str, by: str) -> bool:
    """Set the network's identity policy (hub_agents.identity); audited. False: it already was."""
    policy = validate.choice("identity_policy", policy, IdentityPolicy.values) or IdentityPolicy.OPEN
    locked = Network.objects.select_for_update().get(pk=network.pk)
    if locked.identity_policy == policy:
        return False
    before, locked.identity_policy = locked.identity_policy, policy
    locked.save(update_fields=["identity_policy"])  # a change of access: every process forgets its memo
    network.identity_policy = policy
    audit_record(
        network_id=network.pk,
        action=AuditEntry.Action.NETWORK_POLICY_CHANGED,
        actor=by,
        target=network.name,
        before=before,
        after=policy,
    )
    return True


@transaction.atomic
def membership_set(
    *, user: AbstractBaseUser, network: Network, role: str | None = None, by: str = SYSTEM
) -> Membership:
    """Add the user to the network, or change their role there when `role` is given."""
    role = validate.choice("role", role, Role.values)
    membership, created = Membership.objects.select_for_update().get_or_create(
        user=user, network=network, defaults={"role": role or Role.MEMBER}
    )
    target = f"user {user.get_username()}"
    if created:
        audit_record(
            network_id=network.pk,
            action=AuditEntry.Action.MEMBERSHIP_ADDED,
            actor=by,
            target=target,
            role=membership.role,
        )
    elif role is not None and membership.role != role:
        audit_record(
            network_id=network.pk,
            action=AuditEntry.Action.MEMBERSHIP_CHANGED,
            actor=by,
            target=target,
            role=role,
            previous_role=membership.role,
        )
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def membership_remove(*, user: AbstractBaseUser, network: Network, by: str) -> bool:
    """Take the user out of the network; their user tokens stop reaching it on the next request."""
    membership = Membership.objects.select_for_update().filter(user=user, network=network).first()
    if membership is None:
        return False
    audit_record(
        network_id=network.pk,
        action=AuditEntry.Action.MEMBERSHIP_REMOVED,
        actor=by,
        target=f"user {user.get_username()}",
        role=membership.role,
    )
    membership.delete()
    return True


@transaction.atomic
def token_create(
    *,
    network: Network | None = None,
    role: str | None = None,
    user: AbstractBaseUser | None = None,
    name: str = "",
    tool_profile: str | None = None,
    aliases: object = None,
    by: str = SYSTEM,
) -> tuple[ApiToken, str]:
    """A network token (given `network`) or a user token (given `user`); returns it and its raw value.
    `tool_profile`: the tools its MCP connections list (default all). `aliases`: the aliases and
    patterns it is bound to (hub_agents.identity; a list, or text separated by commas), none: unbound."""
    if (network is None) == (user is None):
        raise HubError("invalid_argument", "A token belongs either to a network or to a user, not both or neither.")
    name = validate.text("name", name, max_len=200) or ""
    tool_profile = validate.choice("tool_profile", tool_profile, ToolProfile.values) or ToolProfile.ALL
    binding = identity.binding_parse(aliases)
    kind = ApiToken.Kind.NETWORK if network is not None else ApiToken.Kind.USER
    raw = ApiToken.generate(kind)
    token = ApiToken.objects.create(
        kind=kind,
        name=name,
        prefix=raw[:12],
        digest=ApiToken.digest_of(raw),
        network=network,
        role=(validate.choice("role", role, Role.values) or Role.MEMBER) if network is not None else "",
        user=user,
        tool_profile=tool_profile,
        aliases=binding,
    )
    # The profile and binding are recorded where they narrow the token (the defaults say nothing new).
    narrowed: dict[str, Any] = {"tool_profile": tool_profile} if tool_profile != ToolProfile.ALL else {}
    if binding:
        narrowed["aliases"] = binding
    for network_id in _token_networks(token):
        audit_record(
            network_id=network_id,
            action=AuditEntry.Action.TOKEN_CREATED,
            actor=by,
            target=_token_target(token),
            role=token.role or "as its user",
            **narrowed,
        )
    return token, raw


@transaction.atomic
def token_revoke(*, token: ApiToken, by: str = SYSTEM) -> bool:
    """Revoke the token: this process refuses it at once, every other within a second. False if it
    already was."""
    revoked = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    if revoked:
        actor_cache.access_changed()  # an .update() sends no signal
        for network_id in _token_networks(token):
            audit_record(
                network_id=network_id, action=AuditEntry.Action.TOKEN_REVOKED, actor=by, target=_token_target(token)
            )
    return bool(revoked)


def _token_networks(token: ApiToken) -> list[str]:
    """Where a token's audit rows go: its network, or each network its user belongs to."""
    if token.network_id is not None:
        return [token.network_id]
    return list(Membership.objects.filter(user_id=token.user_id).values_list("network_id", flat=True))


def _token_target(token: ApiToken) -> str:
    owner = f" of user {token.user.get_username()}" if token.user_id is not None else ""
    return f"token {token.prefix}… ({token.name or 'unnamed'}){owner}"


def token_authenticate(*, raw: str) -> Actor:
    """The actor a bearer token stands for; refuses unknown, revoked and memberless tokens.

    Remembered per process (hub_agents.actor_cache): a change of access reaches the process that
    made it at once and every other within a second."""
    digest = ApiToken.digest_of(raw)  # the cache's key: the raw token is kept nowhere
    epoch = actor_cache.current_epoch()  # before reading: a change committed meanwhile discards the read
    now = timezone.now()
    cached = actor_cache.get(digest, epoch)
    if cached is not None:
        cached.last_used_at = _record_use(cached.token_id, cached.last_used_at, now)
        return _in_logs(cached.actor)
    token = ApiToken.objects.select_related("user").filter(digest=digest, revoked_at__isnull=True).first()
    if token is None or (token.user is not None and not token.user.is_active):
        raise HubError(
            "unauthorized", "The bearer token is unknown or revoked; ask an operator for a token.", status=401
        )
    last_used_at = _record_use(token.pk, token.last_used_at, now)
    actor = _token_actor(token)
    actor_cache.put(digest, epoch, actor=actor, token_id=token.pk, last_used_at=last_used_at)
    return _in_logs(actor)


def token_remembered(*, raw: str) -> Actor | None:
    """token_authenticate's actor when finding it reads and writes nothing (an event loop may ask):
    remembered under the access generation read within the last CHECK_SECONDS, its use recorded
    within LAST_USED_RESOLUTION. None: ask token_authenticate (which may refuse)."""
    cached = actor_cache.get(ApiToken.digest_of(raw), actor_cache.known_epoch())
    if cached is None or cached.last_used_at is None or cached.last_used_at < timezone.now() - LAST_USED_RESOLUTION:
        return None
    return _in_logs(cached.actor)


def _in_logs(actor: Actor) -> Actor:
    """The request's caller from here on: its label (and its network, if one) on every log line."""
    logcontext.set_caller(actor.label, actor.roles)
    return actor


def _token_actor(token: ApiToken) -> Actor:
    if token.kind == ApiToken.Kind.NETWORK:
        return Actor(
            label=f"{token.prefix} ({token.name})" if token.name else token.prefix,
            key=f"token:{token.pk}",
            roles={token.network_id: token.role},
            network_bound=True,
            tool_profile=token.tool_profile,
            aliases=tuple(token.aliases),
            names=(f"token:{token.name or token.prefix}",),
        )
    return _user_actor(
        token.user, key=f"token:{token.pk}", tool_profile=token.tool_profile, aliases=tuple(token.aliases)
    )


def actor_for_key(key: str) -> Actor:
    """The actor an Actor.key stands for now ("token:<id>" or "user:<id>"), to act for it later (an
    approved call runs as its caller): refused once the token is revoked or the user deactivated."""
    kind, _, pk = key.partition(":")
    if kind == "token" and pk.isdigit():
        token = ApiToken.objects.select_related("user").filter(pk=int(pk), revoked_at__isnull=True).first()
        if token is not None and (token.user is None or token.user.is_active):
            return _token_actor(token)
    elif kind == "user" and pk.isdigit():
        user = get_user_model().objects.filter(pk=int(pk), is_active=True).first()
        if user is not None:
            return _user_actor(user)  # not the request's caller: its log lines keep the approver
    raise HubError("unauthorized", "The caller's token was revoked or its user deactivated since.", status=401)


def _record_use(token_id: int, last_used_at: datetime | None, now: datetime) -> datetime | None:
    """The token's last use as recorded after this one. Recorded at most once a minute: most requests
    skip the write (and its round trip) entirely. An .update(), so recording use never overwrites a
    concurrent revoke."""
    if last_used_at is not None and last_used_at >= now - LAST_USED_RESOLUTION:
        return last_used_at
    ApiToken.objects.filter(pk=token_id).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
    ).update(last_used_at=now)
    return now


def actor_for_user(user: AbstractBaseUser) -> Actor:
    """A signed-in user (dashboard, a REST call by session, the dashboard's socket): the request's caller."""
    return _in_logs(_user_actor(user))


def _user_actor(
    user: AbstractBaseUser,
    *,
    key: str | None = None,
    tool_profile: str = ToolProfile.ALL,
    aliases: tuple[str, ...] = (),
) -> Actor:
    """A user, or a user token acting as the user."""
    roles = dict(Membership.objects.filter(user=user).values_list("network_id", "role"))
    username = user.get_username()
    return Actor(
        label=f"user:{username}",
        key=key or f"user:{user.pk}",
        roles=roles,
        network_bound=False,
        user_id=user.pk,
        tool_profile=tool_profile,
        aliases=aliases,
        names=(f"user:{username}", f"{DASHBOARD_SENDER}{username}"),
    )


class _SessionView(dict[str, Any]):
    """A stored session's data, for django.contrib.auth.get_user to judge without changing it: its
    flush (stale hash) and cycle_key (hash under a fallback SECRET_KEY) are for the browser's own
    next request to do; cycling the key from here would sign the browser out on a key rotation."""

    def flush(self) -> None:
        self.clear()

    def cycle_key(self) -> None:
        pass


def session_actor(*, session_key: str | None) -> Actor | None:
    """The actor a dashboard session still stands for, by Django's own test (`get_user`); None
    once the session is gone (logout, expiry), its auth hash no longer matches the user's
    (password changed) or the user was deactivated."""
    if not session_key:
        return None
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    user = get_user(SimpleNamespace(session=_SessionView(store.items())))
    if not user.is_authenticated or not user.is_active:
        return None
    return actor_for_user(user)


@transaction.atomic
def network_default_for(*, user: AbstractBaseUser) -> None:
    """A superuser who belongs to no network yet owns the install's networks nobody owns (those
    `create_network` made from the shell, `make run`'s printed commands among them), or, on an
    install with none, the network "default": the first login shows the agents already there.

    Only at that first login: a network made later is granted by its owner, `create_token --user`
    or the admin, never taken by whichever superuser logs in next."""
    if not user.is_superuser or Membership.objects.filter(user=user).exists():
        return
    ownerless = Network.objects.exclude(memberships__role=Role.OWNER).order_by("name")
    for network in ownerless or [network_create(name="default")[0]]:
        membership_set(user=user, network=network, role=Role.OWNER)


def network_choose(*, user: AbstractBaseUser, network_id: str) -> None:
    """Remember the network the user chose in the dashboard, for their next login (network_landing)."""
    Membership.objects.filter(user=user, network_id=network_id).update(chosen_at=timezone.now())


def user_get_or_create(*, username: str) -> AbstractBaseUser:
    username = validate.required_identifier("username", username)
    user, _ = get_user_model().objects.get_or_create(username=username)
    return user


def session_lock(*, network_id: str, alias: str, resume_id: str | None = None) -> list[AgentSession]:
    """Lock the alias's sessions (and the session `resume_id`, wherever its alias), in key order:
    the first lock a session-touching write takes. Answers them, as locked."""
    mine = Q(alias=alias) | Q(resume_id=resume_id) if resume_id is not None else Q(alias=alias)
    return list(AgentSession.objects.select_for_update().filter(mine, network_id=network_id).order_by("pk"))


def session_touch(*, network_id: str, alias: str) -> None:
    """A live connection from the alias (SSE) is a heartbeat: it keeps the session online."""
    AgentSession.objects.filter(network_id=network_id, alias=alias).update(last_seen_at=timezone.now())


def session_set_idle(sessions: list[AgentSession], *, now: datetime) -> None:
    """The alias finished its work (report_completion): its sessions, as session_lock locked them
    in the caller's sealed transaction, idle, no task, progress 0."""
    for session in sessions:
        session.status, session.task, session.progress, session.last_seen_at = SessionStatus.IDLE, None, 0, now
        update(session, ["status", "task", "progress", "last_seen_at"])
        publish(session_updated_event(session))


def session_updated_event(session: AgentSession) -> HubEvent:
    return HubEvent(
        type=EventType.SESSION_UPDATED,
        network_id=session.network_id,
        audience=(),
        payload={
            "alias": session.alias,
            "resume_id": session.resume_id,
            "status": session.status,
            "task": session.task,
            "progress": session.progress,
        },
    )


def require_network_token_for_node(actor: Actor) -> None:
    """report_node speaks for one machine's agents, and they live in one network (their report_status
    needs a network token): the node reports with that same token."""
    if not actor.network_bound:
        raise HubError(
            "network_token_required",
            "report_node speaks for agents of one network: call it with the network token (ntok_…) its agents use.",
            status=403,
        )


@sealed_atomic
def node_report(
    *,
    actor: Actor,
    node_id: str,
    node_name: str | None = None,
    host: str | None = None,
    os: str | None = None,
    agent_version: str | None = None,
    runtimes: list[dict[str, Any]] | None = None,
    agents: list[dict[str, Any]] | None = None,
    slots_total: int | None = None,
    slots_used: int | None = None,
    network_id: str | None = None,
) -> str:
    """report_node: a node's own heartbeat (`commhub-agent node`). Upserts the node with what it says
    (a field left out keeps what it said before), and records that each alias it hosts runs on it:
    their sessions' node_id, which the fleet reads. Answers the node_id."""
    require_network_token_for_node(actor)
    network = actor.writable_network(network_id)
    for agent in agents or ():  # a node speaks for the agents it hosts: its token must be theirs
        identity.speak_as(actor, network, agent["alias"])
    now = timezone.now()
    said = {
        "node_name": node_name,
        "host": host,
        "os": os,
        "agent_version": agent_version,
        "runtimes": runtimes,
        "agents": agents,
        "slots_total": slots_total,
        "slots_used": slots_used,
    }
    given = {field: value for field, value in said.items() if value is not None}
    # Sessions of the aliases it hosts run here: those that said otherwise move (their cards change).
    # Locked in key order before the node, the order report_status takes them in (its session, then
    # its node): a node's report and its agent's heartbeat never wait for each other crosswise. An
    # alias that never reported has no session yet: its first report_status with this node_id links
    # it. An alias the node no longer lists keeps its last node: it may run on this machine outside
    # the node (`commhub-agent run` with a node_id), and would flap between the two otherwise.
    aliases = sorted({agent["alias"] for agent in agents or ()})
    moved = list(
        AgentSession.objects.select_for_update()
        .filter(network_id=network, alias__in=aliases)
        .exclude(node_id=node_id)
        .order_by("pk")
        .values_list("pk", "alias")
    )
    if moved:
        AgentSession.objects.filter(pk__in=[pk for pk, _ in moved]).update(node_id=node_id)
    # Locked, so two reports of one node (a retry racing the original) write one after the other.
    node = Node.objects.select_for_update().filter(network_id=network, node_id=node_id).first()
    if node is None:
        try:
            with transaction.atomic():  # a savepoint: a concurrent first report (or report_status) may insert it
                node = Node.objects.create(network_id=network, node_id=node_id, created_at=now, last_seen_at=now)
        except IntegrityError:
            node = Node.objects.select_for_update().get(network_id=network, node_id=node_id)
    for field, value in given.items():
        setattr(node, field, value)
    node.last_seen_at = node.reported_at = now
    node.save(update_fields=[*given, "last_seen_at", "reported_at"])
    linked = sorted({alias for _, alias in moved})
    publish(node_updated_event(node, linked=linked))
    return node.node_id


def node_updated_event(node: Node, *, linked: list[str]) -> HubEvent:
    """To the operators: a node reported itself; `linked`: aliases whose sessions now run on it."""
    return HubEvent(
        type=EventType.NODE_UPDATED,
        network_id=node.network_id,
        audience=(),
        payload={
            "node_id": node.node_id,
            "node_name": node.node_name,
            "slots_total": node.slots_total,
            "slots_used": node.slots_used,
            "linked": linked,
        },
    )


# --- commands to nodes (node_command, node_command_ack)


def _command_arguments(kind: str, given: dict[str, Any]) -> None:
    """Each kind takes what COMMAND_NEEDS says: a required one missing, or a refused one given, is
    refused by name."""
    for name, need in COMMAND_NEEDS[kind].items():
        if need == "required" and given[name] is None:
            raise invalid_argument(name, f"is required for a {kind} command", kind="required")
        if need == "refused" and given[name] is not None:
            raise invalid_argument(name, f"is not taken by a {kind} command; leave it out")
    value = given["value"]
    if kind == CommandKind.SET_CONCURRENCY and not 1 <= value <= limits.CONCURRENT_MAX:
        raise invalid_argument("value", f"must be from 1 to {limits.CONCURRENT_MAX} tasks at once for set_concurrency")
    if kind == CommandKind.TAIL and value is not None and not 1 <= value <= limits.TAIL_LINES_MAX:
        raise invalid_argument("value", f"must be from 1 to {limits.TAIL_LINES_MAX} lines for tail")


def _hosted(node: Node) -> list[str]:
    return sorted({agent["alias"] for agent in node.agents or ()})


@sealed_atomic
def node_command_send(
    *,
    actor: Actor,
    node_id: str,
    kind: str,
    alias: str | None = None,
    task_id: str | None = None,
    value: int | None = None,
    network_id: str | None = None,
) -> NodeCommand:
    """node_command: owners and admins send a node a command (pause, resume, stop, restart_session,
    drain, set_concurrency, tail), audited, and pushed after commit to the feeds of the agents it is
    for (the node reads them). A node known to be offline is refused: the command would only expire."""
    network = actor.writable_network(network_id)
    if not actor.can_administer(network):
        raise permission_denied(f"Only owners and admins of network {network} may command its nodes.")
    _command_arguments(kind, {"alias": alias, "task_id": task_id, "value": value})
    if kind == CommandKind.TAIL and value is None:
        value = limits.TAIL_LINES_DEFAULT
    node = Node.objects.filter(network_id=network, node_id=node_id).first()
    if node is None:
        raise HubError(
            "node_not_found", f"No node {node_id!r} reported in network {network}; see list_nodes.", status=404
        )
    now = timezone.now()
    hosted = _hosted(node)
    if node.last_seen_at < offline_cutoff(now) or not hosted:
        raise HubError(
            "node_offline",
            f"Node {node_id} is offline (last seen {node.last_seen_at:%Y-%m-%d %H:%M:%S} UTC"
            f"{'' if hosted else ', hosting no agent'}): a command would expire unanswered. Start "
            "commhub-agent node there, then send it again.",
            status=409,
        )
    if alias is not None and alias not in hosted:
        raise HubError(
            "agent_not_found", f"Node {node_id} hosts no agent {alias!r}; it hosts {', '.join(hosted)}.", status=404
        )
    command = NodeCommand.objects.create(
        network_id=network,
        node=node,
        kind=kind,
        alias=alias,
        task_id=task_id,
        value=value,
        sent_by=actor.label,
        created_at=now,
        expires_at=now + timedelta(seconds=settings.COMMHUB_NODE_COMMAND_ACK_SECONDS),
    )
    audit_record(
        network_id=network,
        action=AuditEntry.Action.NODE_COMMAND_SENT,
        actor=actor.label,
        target=f"node {node_id}",
        command_id=command.command_id,
        kind=kind,
        alias=alias,
        task_id=task_id,
        value=value,
    )
    payload = NodeCommandSent(
        command_id=command.command_id, node_id=node_id, kind=kind, alias=alias, task_id=task_id, value=value
    )
    # Node-wide commands go to every agent's feed it hosts: it reads each, and acts on a command once.
    publish(HubEvent(type=EventType.NODE_COMMAND, network_id=network, audience=(alias,) if alias else tuple(hosted),
                     payload=payload))  # fmt: skip
    return command


def require_network_token_for_ack(actor: Actor) -> None:
    """node_command_ack is a node's answer, sent with the network token its agents use."""
    if not actor.network_bound:
        raise HubError(
            "network_token_required",
            "node_command_ack is the node's answer: call it with the network token (ntok_…) its agents use.",
            status=403,
        )


@sealed_atomic
def node_command_ack(
    *,
    actor: Actor,
    command_id: str,
    ok: bool,
    reason: str | None = None,
    lines: list[str] | None = None,
    network_id: str | None = None,
) -> NodeCommand:
    """node_command_ack: the node answers a command, done (ok) or failed with its reason; tail's lines
    with it. Only the node's own token: it must speak for the agents the command went to."""
    require_network_token_for_ack(actor)
    network = actor.writable_network(network_id)
    command = (
        NodeCommand.objects.select_for_update().select_related("node")
        .filter(network_id=network, command_id=command_id).first()
    )  # fmt: skip
    if command is None:
        raise HubError("command_not_found", f"No command {command_id!r} in network {network}.", status=404)
    for alias in [command.alias] if command.alias else _hosted(command.node):
        identity.speak_as(actor, network, alias)
    status = CommandStatus.DONE if ok else CommandStatus.FAILED
    if status not in COMMAND_TRANSITIONS[command.status]:
        raise HubError(
            "command_answered",
            f"Command {command_id} is {command.status} already"
            f"{f' ({command.reason})' if command.reason else ''}; send a new one if it is still needed.",
            status=409,
        )
    command.status, command.answered_at = status, timezone.now()
    command.reason = None if ok else (reason or "the node gave no reason")
    command.lines = [line[: limits.TAIL_LINE_MAX] for line in lines] if lines is not None else None
    command.save(update_fields=["status", "answered_at", "reason", "lines"])
    publish(node_command_updated_event(command))
    return command


def node_commands_expire_due(*, now: datetime | None = None) -> int:
    """The sweep: commands no node acknowledged in time expire, each once under its row lock (any
    number of sweepers may run). Answers how many expired."""
    now = now or timezone.now()
    due = list(
        NodeCommand.objects.filter(status=CommandStatus.SENT, expires_at__lte=now).values_list("pk", flat=True)[:500]
    )
    expired = 0
    for pk in due:
        with sealed_atomic():
            command = (
                NodeCommand.objects.select_for_update().select_related("node")
                .filter(pk=pk, status=CommandStatus.SENT).first()
            )  # fmt: skip
            if command is None:
                continue  # answered or expired by another sweeper meanwhile
            command.status, command.answered_at = CommandStatus.EXPIRED, now
            command.reason = (
                f"node {command.node.node_id} did not acknowledge it by {command.expires_at:%H:%M:%S} UTC "
                f"(last seen {command.node.last_seen_at:%Y-%m-%d %H:%M:%S} UTC): it is offline or unreachable"
            )
            command.save(update_fields=["status", "answered_at", "reason"])
            publish(node_command_updated_event(command))
            expired += 1
    return expired


def node_command_updated_event(command: NodeCommand) -> HubEvent:
    return HubEvent(
        type=EventType.NODE_COMMAND_UPDATED,
        network_id=command.network_id,
        audience=(),
        payload=NodeCommandUpdated(
            command_id=command.command_id,
            node_id=command.node.node_id,
            kind=command.kind,
            alias=command.alias,
            status=command.status,
            reason=command.reason,
        ),
    )
