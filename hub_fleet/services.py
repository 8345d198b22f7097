"""Writes that span who is there and what they are asked: an agent's heartbeat (report_status)
updates its session and, in the same transaction, starts the task it names and expires due tasks.

It sits above both domain apps (hub_agents, hub_tasks) so that neither imports the other's writes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from hub_agents import limits
from hub_agents.actors import Actor
from hub_agents.models import AgentSession, Node, SessionStatus
from hub_agents.services import session_lock, session_updated_event
from hub_core import validate
from hub_core.errors import HubError
from hub_core.events import publish
from hub_tasks.lifecycle import task_start_for_alias, tasks_expire_due
from hub_tasks.models import InboxMessage


@transaction.atomic
def session_report(
    *,
    actor: Actor,
    resume_id: object,
    alias: object,
    status: object,
    task: object = None,
    output: object = None,
    score: object = None,
    progress: object = None,
    server: object = None,
    hostname: object = None,
    agent: object = None,
    project_dir: object = None,
    version: object = None,
    tmux_name: object = None,
    node_id: object = None,
    session_id: object = None,
    config_path: object = None,
    channels: object = None,
    model: object = None,
    node_name: object = None,
    network_id: object = None,
) -> dict[str, Any]:
    """report_status: the agent's heartbeat; upserts its session by resume_id."""
    if not actor.network_bound:
        raise HubError(
            "network_token_required",
            "report_status binds an agent to one network: call it with a network token (ntok_…).",
            status=403,
        )
    resume_id = validate.required_identifier("resume_id", resume_id)
    alias = validate.required_identifier("alias", alias)
    status = validate.choice("status", status, SessionStatus.values)
    if status is None:
        raise validate.invalid_argument("status", f"is required, one of {', '.join(SessionStatus.values)}")
    activity = {
        "task": validate.text("task", task, max_len=validate.TEXT_MAX),
        "output": (validate.text("output", output, max_len=limits.OUTPUT_MAX) or "")[: limits.STORED_OUTPUT_MAX]
        or None,
        "score": validate.number("score", score, low=0, high=limits.SCORE_MAX),
        "progress": validate.number("progress", progress, low=0, high=limits.PROGRESS_MAX),
    }
    # Who and where the agent is: an omitted field keeps what the agent said before.
    identity = {
        "server": validate.identifier("server", server),
        "hostname": validate.identifier("hostname", hostname),
        "agent": validate.identifier("agent", agent),
        "project_dir": validate.text("project_dir", project_dir, max_len=limits.PATH_MAX),
        "version": validate.identifier("version", version),
        "tmux_name": validate.identifier("tmux_name", tmux_name),
        "node_id": validate.identifier("node_id", node_id),
        "session_id": validate.identifier("session_id", session_id),
        "config_path": validate.text("config_path", config_path, max_len=limits.PATH_MAX),
        "channels": validate.json_string_list("channels", channels, max_len=validate.TEXT_MAX),
        "model": validate.identifier("model", model),
    }
    node_name = validate.identifier("node_name", node_name)
    network = actor.writable_network(validate.identifier("network_id", network_id))
    now = timezone.now()

    # Lock order everywhere: sessions in key order, then tasks (completion_report does the same).
    # This session's own row is locked with the alias's, in one ordered pass: two agents swapping
    # aliases would otherwise each hold the row the other waits for.
    session_lock(network_id=network, alias=alias, resume_id=resume_id)
    # A restarted agent comes back with a new resume_id: its old rows under the alias are orphans.
    AgentSession.objects.filter(network_id=network, alias=alias).exclude(resume_id=resume_id).delete()
    session = AgentSession.objects.select_for_update().filter(network_id=network, resume_id=resume_id).first()
    if session is None:
        try:
            with transaction.atomic():  # a savepoint: a concurrent first report may insert it first
                session = AgentSession.objects.create(
                    network_id=network, resume_id=resume_id, alias=alias, status=status, created_at=now
                )
        except IntegrityError:
            session = AgentSession.objects.select_for_update().get(network_id=network, resume_id=resume_id)
    session.alias, session.status, session.last_seen_at = alias, status, now
    for field, value in activity.items():
        setattr(session, field, value)
    for field, value in identity.items():
        if value is not None:
            setattr(session, field, value)
    session.save()

    if identity["node_id"] is not None:
        _node_upsert(network, identity["node_id"], model=identity["model"], node_name=node_name,
                     agent=identity["agent"], now=now)  # fmt: skip
    tasks_expire_due(network_ids=[network], now=now)
    if status == SessionStatus.WORKING and activity["task"]:
        task_start_for_alias(
            actor_label=actor.label, network_id=network, alias=alias, task_ref=activity["task"], now=now
        )
    publish(session_updated_event(session))
    return {
        "ok": True,
        "resume_id": resume_id,
        "alias": alias,
        "inbox_count": InboxMessage.objects.pending(network_ids=[network], alias=alias).count(),
    }


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
