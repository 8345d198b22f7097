"""Reads about who is there, already scoped to what the actor may see."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Case, CharField, Count, F, QuerySet, Value, When
from django.utils import timezone

from hub_agents.actors import Actor
from hub_agents.models import AgentSession, AuditEntry, SessionStatus
from hub_core import validate
from hub_core.errors import permission_denied
from hub_core.formats import timestamp

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


def audit_list(*, actor: Actor, network_id: str) -> QuerySet[AuditEntry]:
    """The network's audit log, newest first: for its owners and admins only."""
    if not actor.can_administer(network_id):
        raise permission_denied(f"Only owners and admins of network {network_id} may read its audit log.")
    return AuditEntry.objects.filter(network_id=network_id).order_by("-created_at", "-id")
