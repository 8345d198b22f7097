"""Writes that span who is there and what they are asked: an agent's heartbeat (report_status)
updates its session and, in the same transaction, starts the task it names, settles due tasks and
renews the leases of the tasks it holds.

It sits above both domain apps (hub_agents, hub_tasks) so that neither imports the other's writes.
"""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from hub_agents import limits
from hub_agents.actors import Actor
from hub_agents.models import AgentSession, Node, SessionStatus
from hub_agents.services import session_lock, session_updated_event
from hub_core.errors import HubError
from hub_core.events import publish, sealed_atomic
from hub_fleet.results import Heartbeat
from hub_tasks.lifecycle import leases_renew, task_start_for_alias, tasks_expire_due
from hub_tasks.models import InboxMessage


def require_network_token(actor: Actor) -> None:
    """report_status is an agent's, and an agent lives in one network: only a network token reports."""
    if not actor.network_bound:
        raise HubError(
            "network_token_required",
            "report_status binds an agent to one network: call it with a network token (ntok_…).",
            status=403,
        )


@sealed_atomic
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
    """report_status: the agent's heartbeat; upserts its session by resume_id."""
    require_network_token(actor)
    activity = {
        "task": task,
        "output": (output or "")[: limits.STORED_OUTPUT_MAX] or None,
        "score": score,
        "progress": progress,
    }
    # Who and where the agent is: an omitted field keeps what the agent said before.
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
        # What it can do: [] clears its skills, left out keeps them.
        "skills": skills,
        "max_concurrent": max_concurrent,
    }
    network = actor.writable_network(network_id)
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
    session.token_id = actor.token_id  # who it acts through: written by the save below, no query of its own
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
    # The heartbeat renews the leases of the tasks the agent holds (after the settling: a lapsed
    # lease stays lost, as every other process already reads it).
    leases_renew(network_ids=[network], alias=alias, now=now)
    if status == SessionStatus.WORKING and activity["task"]:
        task_start_for_alias(
            actor_label=actor.label, network_id=network, alias=alias, task_ref=activity["task"], now=now
        )
    publish(session_updated_event(session))
    return Heartbeat(resume_id, alias, InboxMessage.objects.pending(network_ids=[network], alias=alias).count())


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
