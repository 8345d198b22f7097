"""The open pool and the skills that find their agents: find_agents, list_open_tasks, claim_task.

An open task (send_task with required_skills, to alias "pool") waits `created`, addressed to the
pool, in no inbox, until an agent whose skills cover it claims it. A claim is one row-locked move
(Move.CLAIM: created → acked, addressed to the claimer from then on), so of any number of claimers
on any number of processes exactly one wins and the others are told who did. An agent's claims are
serialised on its session row (sessions before tasks, the hub's lock order), so no two of them can
both pass its max_concurrent.

Skills are few tags per agent and per task, and JSON containment is not portable to SQLite: the
matching is done here, in Python, over the network's sessions or its open tasks in pool order.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import Count, Q
from django.utils import timezone

from hub_agents.actors import Actor
from hub_agents.models import AgentSession
from hub_agents.selectors import offline_cutoff, session_row, with_effective_status
from hub_agents.services import session_lock
from hub_core.errors import HubError
from hub_core.events import sealed_atomic
from hub_core.formats import timestamp
from hub_fleet.results import Row, TaskClaimed
from hub_tasks.budgets import budget_exhausted, budget_holding
from hub_tasks.caps import caps_admit, caps_take
from hub_tasks.errors import task_not_found, task_terminal
from hub_tasks.lifecycle import leases_renew, task_settle, task_transition
from hub_tasks.models import LEASED, POOL, TERMINAL, Move, Task, TaskStatus, priority_rank

OPEN = Q(status=TaskStatus.CREATED, to_name=POOL, required_skills__isnull=False)
# list_open_tasks's rows.
OPEN_TASK_COLUMNS = (
    "task_id", "from_name", "priority", "content", "context", "required_skills", "created_at", "expires_at",
    "lease_seconds", "network_id",
)  # fmt: skip


def _covers(skills: Iterable[str] | None, needed: Iterable[str] | None) -> bool:
    return set(needed or ()) <= set(skills or ())


def _loads(network_ids: list[str], aliases: Iterable[str]) -> dict[tuple[str, str], int]:
    """How many tasks each alias holds (acked or running), by (network, alias)."""
    held = Task.objects.filter(network_id__in=network_ids, to_name__in=list(aliases), status__in=LEASED)
    return {
        (row["network_id"], row["to_name"]): row["count"]
        for row in held.values("network_id", "to_name").annotate(count=Count("pk"))
    }


def agents_find(
    *, actor: Actor, skill: str | None = None, status: str | None = None, network_id: str | None = None
) -> list[Row]:
    """find_agents: the sessions with `skill` (and `status`), least loaded first, each with its
    skills, max_concurrent, load (tasks it holds: acked or running) and last seen."""
    networks = actor.readable_networks(network_id)
    sessions = with_effective_status(AgentSession.objects.filter(network_id__in=networks), timezone.now())
    if status is not None:
        sessions = sessions.filter(effective_status=status)
    found = [s for s in sessions.order_by("network_id", "alias", "pk") if skill is None or skill in (s.skills or ())]
    loads = _loads(networks, {s.alias for s in found})
    rows = [{**session_row(s), "load": loads.get((s.network_id, s.alias), 0)} for s in found]
    return sorted(rows, key=lambda row: row["load"])  # stable: alias order among equals


def open_tasks(
    *, actor: Actor, alias: str | None = None, skill: str | None = None, network_id: str | None = None, limit: int
) -> list[Row]:
    """list_open_tasks: the open tasks, by priority then age; with `alias`, only those its skills
    cover (what it could claim); with `skill`, only those that need it."""
    networks = actor.readable_networks(network_id)
    skills_of: dict[str, list[str] | None] = {}
    if alias is not None:
        for network, skills in AgentSession.objects.filter(network_id__in=networks, alias=alias).values_list(
            "network_id", "skills"
        ):
            skills_of[network] = skills
    pool = Task.objects.filter(OPEN, network_id__in=networks).order_by(priority_rank(), "created_at", "pk")
    rows: list[Row] = []
    for task in pool.iterator(chunk_size=200):
        if skill is not None and skill not in task.required_skills:
            continue
        if alias is not None and not (
            task.network_id in skills_of and _covers(skills_of[task.network_id], task.required_skills)
        ):
            continue
        rows.append(task.as_row(OPEN_TASK_COLUMNS))
        if len(rows) == limit:
            break
    return rows


@sealed_atomic
def task_claim(*, actor: Actor, task_id: str, alias: str, network_id: str | None = None) -> TaskClaimed:
    """claim_task: `alias` takes an open task, if its skills cover it and it holds fewer tasks than
    its max_concurrent and no cap the task matches is full; the task is then acked by it (and
    leased, if it has a lease)."""
    now = timezone.now()
    network = (
        Task.objects.filter(network_id__in=actor.readable_networks(network_id), pk=task_id)
        .values_list("network_id", flat=True)
        .first()
    )
    if network is None:
        raise task_not_found(task_id)
    actor.check_write(network)
    # Sessions before tasks: one claim of an agent at a time; its newest session is the claimer.
    sessions = session_lock(network_id=network, alias=alias)
    session = max(sessions, key=lambda row: row.last_seen_at, default=None)
    task = Task.objects.select_for_update().get(pk=task_id)
    task_settle(task, now=now)  # an open task past its TTL is expired, not claimed
    _check_claimable(task, alias)
    _check_claimer(task, alias, session, now)
    task.to_name = alias  # a runtime cap counts the claimer's runtime
    full, slots = caps_admit(task)
    if full is not None:
        raise HubError(
            "cap_full",
            f"Cap {full.label} of network {network} has all {full.limit} slot(s) taken: claim again once "
            "a run of it ends (cap_list shows the caps).",
            status=409,
            cap_id=full.pk,
        )
    spent = budget_holding(task, now=now)  # the claimer's budget or the network's, after the caps
    if spent is not None:  # hold or refuse alike: the task stays in the pool, for a claim once it allows
        raise budget_exhausted(spent, now=now)
    caps_take(task, slots, now=now)
    task.delivered_at, task.first_read_at = now, now
    task_transition(
        task, Move.CLAIM, TaskStatus.ACKED, actor=actor.label, now=now, detail=f"claimed by {alias}",
        fields=["to_name", "delivered_at", "first_read_at"], by=alias,
    )  # fmt: skip
    leases_renew(network_ids=[network], alias=alias, now=now)
    return TaskClaimed(task.task_id, alias, task.lease_expires_at)


def _check_claimable(task: Task, alias: str) -> None:
    if task.is_open():
        return
    if task.required_skills is not None and task.to_name != POOL:
        # The loser of a race (or a late claimer) learns who has it.
        raise HubError(
            "task_claimed",
            f"Task {task.task_id} was claimed by {task.to_name}"
            + (" (you)" if task.to_name == alias else "")
            + "; list_open_tasks shows what is still open.",
            status=409,
            task_id=task.task_id,
            claimed_by=task.to_name,
        )
    if task.status in TERMINAL:
        raise task_terminal(task.status, task_id=task.task_id)
    raise HubError(
        "task_not_open",
        f"Task {task.task_id} is not an open task: it was sent to {task.to_name}.",
        status=409,
        task_id=task.task_id,
    )


def _check_claimer(task: Task, alias: str, session: AgentSession | None, now: datetime) -> None:
    if session is None or alias == POOL:
        raise HubError(
            "session_required",
            f"{alias!r} has not reported in this network: report_status with your skills, then claim.",
            status=409,
        )
    if session.last_seen_at < offline_cutoff(now):
        # A claim in the name of an agent that stopped heartbeating would strand the task with it.
        raise HubError(
            "agent_offline",
            f"{alias} is offline (no heartbeat since {timestamp(session.last_seen_at)}): it cannot take "
            "work; report_status first.",
            status=409,
        )
    missing = sorted(set(task.required_skills or ()) - set(session.skills or ()))
    if missing:
        raise HubError(
            "skills_missing",
            f"Task {task.task_id} needs {', '.join(missing)}, which {alias} has not reported (report_status skills).",
            status=409,
            missing_skills=missing,
        )
    if session.max_concurrent is not None:
        held = Task.objects.filter(network_id=task.network_id, to_name=alias, status__in=LEASED).count()
        if held >= session.max_concurrent:
            raise HubError(
                "at_capacity",
                f"{alias} holds {held} task(s), its max_concurrent: finish one (report_completion) "
                "before claiming more.",
                status=409,
            )
