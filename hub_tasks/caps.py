"""Concurrency caps held by the hub: at most N tasks of a scope with their agents at once.

A cap counts, in its network, all tasks, those whose agent runs one runtime (as the agent's node
reports it), or those needing one skill. A task holds a slot (a CapSlot row) of every cap it matches
from its delivery until it leaves its agent (ends, or goes back to waiting); a task whose delivery
would pass a full cap waits `created` instead (Task.waiting_cap, list_tasks blocked), and is
delivered, by priority then age, as slots free.

Exactly once across processes: slots are counted and taken only under the row locks of the caps
concerned, always taken in primary-key order (every cap of the network when releasing), so two
processes never both fill the same last slot. On SQLite the database's write lock serialises the same.
Networks with no cap pay one indexed read per delivery or end of a run.

The moves themselves (RELEASE) are made by hub_tasks.lifecycle, which calls in here.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count

from hub_agents.models import AgentSession, Node
from hub_tasks.budgets import budget_holding
from hub_tasks.models import Cap, CapScope, CapSlot, Task, TaskStatus, priority_rank


def network_caps(network_id: str) -> list[Cap]:
    """The network's caps (mostly none: one indexed read)."""
    return list(Cap.objects.filter(network_id=network_id).order_by("pk"))


def runtime_of(network_id: str, alias: str) -> str | None:
    """The runtime the agent's node reports for it (its agents list, else the node's runtime)."""
    node_id = (
        AgentSession.objects.filter(network_id=network_id, alias=alias, node_id__isnull=False)
        .order_by("-last_seen_at")
        .values_list("node_id", flat=True)
        .first()
    )
    node = Node.objects.filter(network_id=network_id, node_id=node_id).first() if node_id else None
    if node is None:
        return None
    for agent in node.agents or ():
        if isinstance(agent, dict) and agent.get("alias") == alias and agent.get("runtime"):
            return str(agent["runtime"])
    return node.runtime


def _matching(task: Task, caps: list[Cap]) -> list[Cap]:
    runtime: list[str | None] = []  # looked up once, only if a runtime cap asks
    matched = []
    for cap in caps:
        if cap.scope == CapScope.SKILL and cap.value not in (task.required_skills or ()):
            continue
        if cap.scope == CapScope.RUNTIME:
            if not runtime:
                runtime.append(runtime_of(task.network_id, task.to_name))
            if runtime[0] != cap.value:
                continue
        matched.append(cap)
    return matched


def _used(caps: list[Cap]) -> dict[str, int]:
    rows = CapSlot.objects.filter(cap__in=caps).values("cap_id").annotate(n=Count("pk"))
    return {row["cap_id"]: row["n"] for row in rows}


def caps_admit(task: Task) -> tuple[Cap | None, list[Cap]]:
    """Before a task's delivery: lock the caps it matches; the first of them that is full (it must
    wait), or None and the caps whose slots it takes (caps_take, once it is saved)."""
    caps = network_caps(task.network_id)
    if not caps:
        return None, []
    matched = _matching(task, caps)
    if not matched:
        return None, []
    locked = list(Cap.objects.select_for_update().filter(pk__in=[cap.pk for cap in matched]).order_by("pk"))
    used = _used(locked)
    full = next((cap for cap in locked if used.get(cap.pk, 0) >= cap.limit), None)
    return full, ([] if full is not None else locked)


def caps_take(task: Task, caps: list[Cap], *, now: datetime) -> None:
    CapSlot.objects.bulk_create(CapSlot(cap=cap, task=task, created_at=now) for cap in caps)


def slots_free(task: Task) -> bool:
    """A task left its agent: its slots are free. Whether it held any (then caps_releasable)."""
    return CapSlot.objects.filter(task=task).delete()[0] > 0


def caps_releasable(network_id: str, *, now: datetime) -> list[tuple[Task, Cap]]:
    """The waiting tasks that now fit, by priority then age within each cap, each locked, its slots
    taken and its waiting_cap cleared in memory (the caller delivers it). Every cap of the network is
    locked first, in primary-key order, as caps_admit locks its subset: no two releasers interleave."""
    caps = list(Cap.objects.select_for_update().filter(network_id=network_id).order_by("pk"))
    used = _used(caps)
    released: list[tuple[Task, Cap]] = []
    for cap in caps:
        waiting = Task.objects.filter(network_id=network_id, waiting_cap=cap.pk, status=TaskStatus.CREATED)
        for task_id in waiting.order_by(priority_rank(), "created_at", "pk").values_list("pk", flat=True):
            if used.get(cap.pk, 0) >= cap.limit:
                break
            # Skip a waiting task another transaction holds (cancelling or reassigning it, which may
            # itself wait for these caps): never wait for a task's lock while holding the caps'.
            task = Task.objects.select_for_update(skip_locked=True).filter(pk=task_id).first()
            if task is None or task.status != TaskStatus.CREATED or task.waiting_cap != cap.pk:
                continue  # cancelled or moved while it waited, or held by another transaction now
            matched = _matching(task, caps)
            full = next((other for other in matched if used.get(other.pk, 0) >= other.limit), None)
            if full is not None:  # another of its caps is full: it waits for that one now
                task.waiting_cap = full.pk
                task.save(update_fields=["waiting_cap"])
                continue
            spent = budget_holding(task, now=now)  # the caps' locks are held: budgets come after them
            if spent is not None:  # a budget of its scope was spent while it waited: it waits for that now
                task.waiting_cap, task.waiting_budget = None, spent.pk
                task.save(update_fields=["waiting_cap", "waiting_budget"])
                continue
            caps_take(task, matched, now=now)
            for other in matched:
                used[other.pk] = used.get(other.pk, 0) + 1
            task.waiting_cap = None
            released.append((task, cap))
    return released
