"""Reads that span who is there and what they are asked: an agent's status with its inbox and
completions, the dashboard's fleet with each session's current task.

They sit above both domain apps (hub_agents, hub_tasks) so that neither imports the other's reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Count
from django.utils import timezone

from hub_agents.actors import Actor
from hub_agents.models import AgentSession, SessionStatus
from hub_agents.selectors import node_command_list, node_list, session_list, session_row, with_effective_status
from hub_fleet.results import SessionDetail
from hub_tasks.models import POOL, Completion, InboxMessage, Task, TaskStatus
from hub_tasks.selectors import usage_totals

RECENT_COMPLETIONS = 5  # get_session_status's latest completions


def session_get(*, actor: Actor, alias: str, network_id: str | None = None) -> SessionDetail:
    """get_session_status: the alias's session (or None), pending inbox and latest completions.
    The pending count includes overdue tasks' rows until their deadlines are settled
    (hub_tasks.settled: the tool settles first)."""
    networks = actor.readable_networks(network_id)
    now = timezone.now()
    session = (
        with_effective_status(AgentSession.objects.filter(network_id__in=networks, alias=alias), now)
        .order_by("-last_seen_at")
        .first()
    )
    # Without a session, still answer for the alias's inbox across the scope: tasks may wait for it.
    scope = [session.network_id] if session else networks
    completions = Completion.objects.filter(network_id__in=scope, session_name=alias).order_by("-completed_at")
    completions = completions[:RECENT_COMPLETIONS]
    return SessionDetail(
        session=session_row(session) if session else None,
        inbox_pending=InboxMessage.objects.pending(network_ids=scope, alias=alias).count(),
        recent_completions=[completion.as_row() for completion in completions],
    )


def fleet(*, actor: Actor, network_id: str, alias: str | None = None) -> dict[str, Any]:
    """The dashboard's fleet: every session (or only `alias`'s) with its pending inbox, its current task
    and its node (None: it never named one, or its node is unknown), problems first, and the counts by
    status over the whole network."""
    listed = session_list(actor=actor, network_id=network_id, alias=alias)
    inbox = InboxMessage.objects.filter(network_id=network_id, acked_at__isnull=True)
    if alias is not None:
        inbox = inbox.filter(to_alias=alias)
    pending = dict(inbox.values_list("to_alias").annotate(count=Count("id")))
    current = _current_tasks(network_id=network_id, sessions=listed.sessions)
    # The machine each runs on (report_node, or report_status with a node_id): one query for the cards.
    wanted = {row["node_id"] for row in listed.sessions if row["node_id"]}
    nodes = {node["node_id"]: node for node in node_list(actor=actor, network_id=network_id, node_ids=wanted)}
    sessions = [
        {
            **row,
            "inbox_pending": pending.get(row["alias"], 0),
            "current_task": current.get(row["resume_id"]),
            "node": nodes.get(row["node_id"] or ""),
        }
        for row in listed.sessions
    ]
    sessions.sort(key=lambda row: (problem_rank(row), row["alias"]))
    return {"sessions": sessions, "summary": listed.summary}


# Problems first: what needs a person, then work stranded with an agent that went away, then the rest.
_RANKS = {SessionStatus.ERROR: 0, SessionStatus.BLOCKED: 1, SessionStatus.WAITING_INPUT: 2}
_RANKS |= {SessionStatus.WORKING: 4, SessionStatus.IDLE: 5}


def problem_rank(row: dict[str, Any]) -> int:
    """A fleet row's place in the problems-first order (lower first): error, blocked, waiting for
    input, offline (said so, or silent past COMMHUB_OFFLINE_AFTER_SECONDS) with work pending or
    under way, working, idle, and offline with nothing to do last."""
    if row["status"] == SessionStatus.OFFLINE:
        return 3 if row["inbox_pending"] or row["current_task"] else 6
    return _RANKS.get(row["status"], 6)


def agent_health(*, network_id: str, aliases: Iterable[str]) -> dict[str, dict[str, Any]]:
    """What an open task's row and page say about its agent when it cannot be counted on, by alias
    (the alias's most recently seen session): `error` (it reported status error; `output` is what it
    said), `offline` (it said it went offline), `silent` (no call for COMMHUB_OFFLINE_AFTER_SECONDS:
    offline everywhere, whatever it last said), `unknown` (no agent has reported as it). Aliases
    whose agent is fine are left out."""
    wanted = set(aliases) - {POOL}
    sessions = with_effective_status(
        AgentSession.objects.filter(network_id=network_id, alias__in=wanted), timezone.now()
    ).order_by("alias", "last_seen_at")
    newest = {session.alias: session for session in sessions}  # ascending: the newest wins
    health = {alias: {"state": "unknown"} for alias in wanted - newest.keys()}
    for alias, session in newest.items():
        common = {"said": session.status, "last_seen_at": session.last_seen_at, "output": session.output or ""}
        if session.effective_status == SessionStatus.OFFLINE:
            health[alias] = {"state": "offline" if session.status == SessionStatus.OFFLINE else "silent", **common}
        elif session.effective_status == SessionStatus.ERROR:
            health[alias] = {"state": "error", **common}
    return health


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


COMMANDS_SHOWN = 10  # the Nodes page's latest commands per node


def nodes_overview(*, actor: Actor, network_id: str) -> list[dict[str, Any]]:
    """The Nodes page: every node of the network (list_nodes' rows) with, for each agent it hosts,
    what the node reported (concurrency, running, paused), its session (status, the task it runs and
    since when, its last output, its runtime session) and its usage today; the node's usage today
    summed over them, and its latest commands with their states."""
    nodes = node_list(actor=actor, network_id=network_id)
    sessions = {row["alias"]: row for row in fleet(actor=actor, network_id=network_id)["sessions"]}
    usage = {row["alias"]: row["today"] for row in usage_totals(actor=actor, network_id=network_id)["agents"]}
    commands: dict[str, list[dict[str, Any]]] = {}
    for command in node_command_list(actor=actor, network_id=network_id, limit=COMMANDS_SHOWN * max(len(nodes), 1)):
        commands.setdefault(command["node_id"], []).append(command)
    for node in nodes:
        agents = []
        for reported in node["agents"]:
            session = sessions.get(reported["alias"])
            agents.append({**reported, "session": session, "usage": usage.get(reported["alias"])})
        node["agents"] = agents
        node["usage_today"] = {
            name: sum((agent["usage"] or {}).get(name, 0) or 0 for agent in agents)
            for name in ("runs", "tokens_in", "tokens_out", "cost_usd")
        }
        node["commands"] = commands.get(node["node_id"], [])[:COMMANDS_SHOWN]
    return nodes
