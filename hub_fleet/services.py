"""Writes that span who is there and what they are asked: an agent's heartbeat (report_status)
settles the tasks that fell due, then updates its session and, in the same transaction, starts the
task it names and renews the leases of the tasks it holds. A heartbeat that repeats what the agent
said last time within a minute, with nothing to start or renew, is one statement and publishes
nothing.

It sits above both domain apps (hub_agents, hub_tasks) so that neither imports the other's writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from hub_agents import limits
from hub_agents.actors import Actor
from hub_agents.models import AgentSession, Node, SessionStatus
from hub_agents.selectors import offline_cutoff
from hub_agents.services import session_lock, session_updated_event
from hub_core.errors import HubError
from hub_core.events import publish, sealed_atomic
from hub_core.sql import placeholders, stamp, update
from hub_fleet.results import Heartbeat
from hub_tasks.lifecycle import leases_renew, task_start_for_alias, tasks_expire_due
from hub_tasks.models import TRANSITIONS, InboxMessage, Move, Task
from hub_tasks.reads import lease_running

# A repeat within this long of the session's last report is no news; one after it publishes the
# session again, so what pages show of when it was last seen ("Seen 2 min ago") is never older than
# this plus the agent's own heartbeat interval (the contract suggests 3 minutes: every one publishes).
SEEN_REFRESH = timedelta(seconds=60)


def require_network_token(actor: Actor) -> None:
    """report_status is an agent's, and an agent lives in one network: only a network token reports."""
    if not actor.network_bound:
        raise HubError(
            "network_token_required",
            "report_status binds an agent to one network: call it with a network token (ntok_…).",
            status=403,
        )


# What a report says, column by column. Activity is what it is doing now: a field left out is
# cleared. Identity is who and where it is: a field left out keeps what it said before.
ACTIVITY = ("task", "output", "score", "progress")
IDENTITY = (
    "server", "hostname", "agent", "project_dir", "version", "tmux_name", "node_id", "session_id",
    "config_path", "channels", "model",
    "skills",  # what it can do: [] clears its skills, left out keeps them
    "max_concurrent",
)  # fmt: skip


def session_report(
    *,
    actor: Actor,
    resume_id: str,
    alias: str,
    status: str,
    task: str | None = None,
    output: str | None = None,
    score: float | None = None,
    progress: float | None = None,
    server: str | None = None,
    hostname: str | None = None,
    agent: str | None = None,
    project_dir: str | None = None,
    version: str | None = None,
    tmux_name: str | None = None,
    node_id: str | None = None,
    session_id: str | None = None,
    config_path: str | None = None,
    channels: str | None = None,
    model: str | None = None,
    node_name: str | None = None,
    skills: list[str] | None = None,
    max_concurrent: int | None = None,
    network_id: str | None = None,
) -> Heartbeat:
    """report_status: the agent's heartbeat; upserts its session by resume_id.

    Most heartbeats repeat what the agent said last time: they only move last_seen_at, and are
    answered by one statement (`_heartbeat_repeated`). Anything else, and anything a reader would
    see change, takes the locked path (`_report_written`)."""
    require_network_token(actor)
    activity = {
        "task": task,
        "output": (output or "")[: limits.STORED_OUTPUT_MAX] or None,
        "score": score,
        "progress": progress,
    }
    identity = {
        "server": server,
        "hostname": hostname,
        "agent": agent,
        "project_dir": project_dir,
        "version": version,
        "tmux_name": tmux_name,
        "node_id": node_id,
        "session_id": session_id,
        "config_path": config_path,
        "channels": channels,
        "model": model,
        "skills": skills,
        "max_concurrent": max_concurrent,
    }
    network = actor.writable_network(network_id)
    now = timezone.now()
    report = _Report(network, resume_id, alias, status, activity, identity, actor.token_id, now)
    # Settle what fell due first, as the locked path does (usually no query: hub_tasks.deadlines).
    tasks_expire_due(network_ids=[network], now=now)
    inbox_count = _heartbeat_repeated(report)
    if inbox_count is None:
        inbox_count = _report_written(report, actor_label=actor.label, node_name=node_name)
    return Heartbeat(resume_id, alias, inbox_count)


@dataclass(frozen=True)
class _Report:
    network: str
    resume_id: str
    alias: str
    status: str
    activity: dict[str, Any]
    identity: dict[str, Any]
    token_id: int | None
    now: datetime


def _heartbeat_repeated(report: _Report) -> int | None:
    """A heartbeat that changes nothing a reader sees: move the session's last_seen_at (and record
    the token it came through) in one statement, which also answers the inbox count. None: it is not
    one (its session is new, says something else, was read offline, has an orphan under its alias to
    remove, holds a lease to renew, names a task to start, or speaks for a node) and nothing was
    written; the locked path takes it.

    A compare-and-swap: every condition is checked by the UPDATE on the row it writes, so a report
    another transaction changed first is not mistaken for a repeat."""
    if report.identity["node_id"] is not None or report.identity["skills"] is not None:
        return None  # a node to upsert; skills stored as JSON (compared the same on no two databases)
    at = stamp(report.now)
    sessions, tasks, inbox = AgentSession._meta.db_table, Task._meta.db_table, InboxMessage._meta.db_table
    said = {"alias": report.alias, "status": report.status, **report.activity}
    said |= {field: value for field, value in report.identity.items() if value is not None}
    same = " AND ".join(f"{column} IS NULL" if value is None else f"{column} = %s" for column, value in said.items())
    startable = sorted(TRANSITIONS[Move.START][0])
    sql = (
        f"UPDATE {sessions} SET last_seen_at = %s, token_id = %s"
        f" WHERE network_id = %s AND resume_id = %s AND {same} AND last_seen_at >= %s"
        # No orphan of a restarted agent left under the alias.
        f" AND NOT EXISTS (SELECT 1 FROM {sessions} o WHERE o.network_id = %s AND o.alias = %s"
        " AND o.resume_id <> %s)"
        # No lease of the alias's to renew (hub_tasks.lifecycle.leases_renew's `held`).
        f" AND NOT EXISTS (SELECT 1 FROM {tasks} t WHERE t.network_id = %s AND t.to_name = %s AND {lease_running('t')})"
    )
    params: list[Any] = [at, report.token_id, report.network, report.resume_id]
    params += [value for value in said.values() if value is not None]
    # Reported within SEEN_REFRESH, and not read offline meanwhile.
    params += [stamp(max(report.now - SEEN_REFRESH, offline_cutoff(report.now)))]
    params += [report.network, report.alias, report.resume_id, report.network, report.alias, at]
    if report.status == SessionStatus.WORKING and report.activity["task"]:
        # No delivered or acked task it names to start (task_start_for_alias's match).
        sql += (
            f" AND NOT EXISTS (SELECT 1 FROM {tasks} s WHERE s.network_id = %s AND s.to_name = %s"
            f" AND s.status IN ({placeholders(len(startable))}) AND (s.task_id = %s OR s.content = %s))"
        )
        params += [report.network, report.alias, *startable, report.activity["task"], report.activity["task"]]
    sql += (
        f" RETURNING (SELECT COUNT(*) FROM {inbox} m WHERE m.network_id = %s AND m.to_alias = %s"
        " AND m.acked_at IS NULL)"
    )
    params += [report.network, report.alias]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return None if row is None else row[0]


@sealed_atomic
def _report_written(report: _Report, *, actor_label: str, node_name: str | None) -> int:
    """The locked path of a report: upsert the session, remove the alias's orphans, upsert the node,
    renew leases, start the task it names; publish session_updated when a reader sees a change.
    Answers the inbox count."""
    network, alias, resume_id, now = report.network, report.alias, report.resume_id, report.now
    # Lock order everywhere: sessions in key order, then tasks (completion_report does the same).
    # This session's own row is locked with the alias's, in one ordered pass: two agents swapping
    # aliases would otherwise each hold the row the other waits for.
    locked = session_lock(network_id=network, alias=alias, resume_id=resume_id)
    # A restarted agent comes back with a new resume_id: its old rows under the alias are orphans.
    orphans = [row.pk for row in locked if row.alias == alias and row.resume_id != resume_id]
    if orphans:
        AgentSession.objects.filter(pk__in=orphans).delete()
    session = next((row for row in locked if row.resume_id == resume_id), None)
    created = session is None
    if session is None:
        try:
            with transaction.atomic():  # a savepoint: a concurrent first report may insert it first
                session = AgentSession.objects.create(
                    network_id=network, resume_id=resume_id, alias=alias, status=report.status, created_at=now
                )
        except IntegrityError:
            created = False
            session = AgentSession.objects.select_for_update().get(network_id=network, resume_id=resume_id)
    before, seen = _shown(session), session.last_seen_at
    was_silent = seen < offline_cutoff(now)
    session.alias, session.status, session.last_seen_at = alias, report.status, now
    session.token_id = report.token_id  # who it acts through: written by the update below, no query of its own
    written = ["alias", "status", "last_seen_at", "token_id", *report.activity]
    for field, value in report.activity.items():
        setattr(session, field, value)
    for field, value in report.identity.items():
        if value is not None:
            setattr(session, field, value)
            written.append(field)
    update(session, written)  # the row is locked: what the report leaves is as read

    if report.identity["node_id"] is not None:
        identity = report.identity
        _node_upsert(network, identity["node_id"], model=identity["model"], node_name=node_name,
                     agent=identity["agent"], now=now)  # fmt: skip
    # The heartbeat renews the leases of the tasks the agent holds (after the settling, which
    # session_report did first: a lapsed lease stays lost, as every other process already reads it).
    leases_renew(network_ids=[network], alias=alias, now=now)
    if report.status == SessionStatus.WORKING and report.activity["task"]:
        task_start_for_alias(
            actor_label=actor_label, network_id=network, alias=alias, task_ref=report.activity["task"], now=now
        )
    # A repeat is no news (the fleet card, get_all_status and the feeds read the same as before),
    # unless it comes more than SEEN_REFRESH after the last report: pages then show it seen again.
    if created or orphans or was_silent or seen < now - SEEN_REFRESH or _shown(session) != before:
        publish(session_updated_event(session))
    return InboxMessage.objects.pending(network_ids=[network], alias=alias).count()


def _shown(session: AgentSession) -> tuple[Any, ...]:
    """What readers see of a session, but for when it was last seen."""
    return tuple(getattr(session, field) for field in ("alias", "status", *ACTIVITY, *IDENTITY))


def _node_upsert(
    network: str, node_id: str, *, model: str | None, node_name: str | None, agent: str | None, now: datetime
) -> None:
    # "agent-node:claude-agent-sdk" runs on the claude-agent-sdk runtime; a bare agent name is its own runtime.
    runtime = agent.split(":", 1)[1] if agent and ":" in agent else agent
    node, created = Node.objects.select_for_update().get_or_create(
        network_id=network,
        node_id=node_id,
        defaults={"model": model, "node_name": node_name, "runtime": runtime, "created_at": now, "last_seen_at": now},
    )
    if not created:
        node.model = model or node.model
        node.node_name = node_name or node.node_name
        node.runtime = runtime or node.runtime
        node.last_seen_at = now
        node.save(update_fields=["model", "node_name", "runtime", "last_seen_at"])
