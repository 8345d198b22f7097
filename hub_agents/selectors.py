"""Reads about who is there, already scoped to what the actor may see."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Case, CharField, Count, F, QuerySet, Value, When
from django.utils import timezone

from commhub import validate
from commhub.errors import permission_denied
from commhub.formats import timestamp
from hub_agents.actors import Actor
from hub_agents.models import AgentSession, AuditEntry, SessionStatus
from hub_tasks.lifecycle import tasks_expire_due
from hub_tasks.models import Completion, InboxMessage, Task, TaskStatus

SESSION_COLUMNS = (
    "resume_id", "alias", "status", "task", "output", "score", "progress", "server", "hostname",
    "agent", "project_dir", "version", "tmux_name", "node_id", "session_id", "config_path",
    "channels", "model",
)  # fmt: skip


def offline_cutoff(now: datetime) -> datetime:
    return now - timedelta(seconds=settings.COMMHUB_OFFLINE_AFTER_SECONDS)


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
    row["network_id"] = session.network_id
    row["created_at"] = timestamp(session.created_at)
    row["last_seen_at"] = timestamp(session.last_seen_at)
    return row


def session_status_of(*, network_id: str, alias: str, now: datetime) -> str | None:
    """The alias's status as everyone reads it, or None if no agent has reported as it."""
    sessions = AgentSession.objects.filter(network_id=network_id, alias=alias).order_by("-last_seen_at")
    return with_effective_status(sessions, now).values_list("effective_status", flat=True).first()


def session_list(
    *,
    actor: Actor,
    filter_status: object = None,
    filter_server: object = None,
    network_id: object = None,
) -> dict[str, Any]:
    """get_all_status: every session in scope, and counts by status over the whole scope."""
    status = validate.choice("filter_status", filter_status, SessionStatus.values)
    server = validate.identifier("filter_server", filter_server)
    networks = actor.readable_networks(validate.identifier("network_id", network_id))
    scope = with_effective_status(AgentSession.objects.filter(network_id__in=networks), timezone.now())

    sessions = scope
    if status is not None:
        sessions = sessions.filter(effective_status=status)
    if server is not None:
        sessions = sessions.filter(server=server)
    summary = scope.values("effective_status").annotate(count=Count("id")).order_by("-count", "effective_status")
    return {
        "ok": True,
        "sessions": [session_row(session) for session in sessions.order_by("network_id", "alias", "id")],
        "summary": [{"status": row["effective_status"], "count": row["count"]} for row in summary],
    }


def session_get(*, actor: Actor, alias: object, network_id: object = None) -> dict[str, Any]:
    """get_session_status: the alias's session (or null), pending inbox and 5 latest completions."""
    alias = validate.required_identifier("alias", alias)
    networks = actor.readable_networks(validate.identifier("network_id", network_id))
    now = timezone.now()
    tasks_expire_due(network_ids=networks, now=now)
    session = (
        with_effective_status(AgentSession.objects.filter(network_id__in=networks, alias=alias), now)
        .order_by("-last_seen_at")
        .first()
    )
    # Without a session, still answer for the alias's inbox across the scope: tasks may wait for it.
    scope = [session.network_id] if session else networks
    completions = Completion.objects.filter(network_id__in=scope, session_name=alias).order_by("-completed_at")[:5]
    return {
        "ok": True,
        "session": session_row(session) if session else None,
        "inbox_pending": InboxMessage.objects.pending(network_ids=scope, alias=alias).count(),
        "recent_completions": [completion.as_row() for completion in completions],
    }


def fleet(*, actor: Actor, network_id: str) -> dict[str, Any]:
    """The dashboard's fleet: every session with its pending inbox, online ones first."""
    listed = session_list(actor=actor, network_id=network_id)
    pending = dict(
        InboxMessage.objects.filter(network_id=network_id, acked_at__isnull=True)
        .values_list("to_alias")
        .annotate(count=Count("id"))
    )
    current = _current_tasks(network_id=network_id, sessions=listed["sessions"])
    sessions = [
        {**row, "inbox_pending": pending.get(row["alias"], 0), "current_task": current.get(row["resume_id"])}
        for row in listed["sessions"]
    ]
    sessions.sort(key=lambda row: (row["status"] == SessionStatus.OFFLINE, row["alias"]))
    return {"sessions": sessions, "summary": listed["summary"]}


def _current_tasks(*, network_id: str, sessions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each session's current hub task, by resume_id: the task its status names by id, else its
    alias's newest running one. `since` is when that task started (or was delivered): what
    "stuck for how long" is measured from. Two queries for the whole fleet, not one per card."""
    columns = ("task_id", "to_name", "content", "status", "created_at", "delivered_at", "started_at")
    named = {row["task"] for row in sessions if row["task"]}
    by_id = {row["task_id"]: row for row in Task.objects.filter(network_id=network_id, pk__in=named).values(*columns)}
    running: dict[str, dict[str, Any]] = {}
    for row in (
        Task.objects.filter(
            network_id=network_id, status=TaskStatus.RUNNING, to_name__in={s["alias"] for s in sessions}
        )
        .order_by("started_at")
        .values(*columns)
    ):
        running[row["to_name"]] = row  # ascending, so the newest wins
    current = {}
    for session in sessions:
        task = by_id.get(session["task"] or "") or running.get(session["alias"])
        if task is not None:
            since = task["started_at"] or task["delivered_at"] or task["created_at"]
            current[session["resume_id"]] = {**task, "since": since}
    return current


def audit_list(*, actor: Actor, network_id: str) -> QuerySet[AuditEntry]:
    """The network's audit log, newest first: for its owners and admins only."""
    if not actor.can_administer(network_id):
        raise permission_denied(f"Only owners and admins of network {network_id} may read its audit log.")
    return AuditEntry.objects.filter(network_id=network_id).order_by("-created_at", "-id")
