"""The single path by which a task changes state or an inbox row is written.

Every status change goes through `task_transition`: it checks the move against the transition
table, stamps the times, withdraws inbox rows of a task that has ended, opens and closes its
attempts (TaskAttempt: one per delivery, kept whole across retries), writes the TaskEvent and
queues the push, all inside the caller's transaction.

Expiry is a deadline, not a job: `tasks_expire_due` settles overdue tasks and is called at the
start of every read and write that could show one, so no caller ever sees a stale "delivered". It
looks only where a network's earliest deadline has passed (hub_tasks.deadlines), so it usually asks
the database nothing. Leases and retries are deadlines of the same kind, settled in the same step
(`task_settle`): an acked or running task whose lease lapsed is requeued or failed (its `on_lost`),
a failure with attempts left is held `created` until its `retry_at` and then delivered again.
The `sweep` management command runs the same step for every network, for nobody-reads deployments.

`stats` are not counted here: triggers in the database keep TaskCount in step with every insert,
status change and delete of a task (migration 0003); `counts_changed` only tells hub_tasks.counts
when to fold a network's rows.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import DateTimeField, ExpressionWrapper, F, Max, Q, Value
from django.utils import timezone

from hub_agents.models import AgentSession
from hub_core.events import EventType, HubEvent, publish, sealed_atomic
from hub_core.formats import timestamp
from hub_core.metrics import DEAD_LETTERS, LEASE_LAPSES, RETRIES, count_on_commit
from hub_core.sql import insert, update
from hub_tasks import limits
from hub_tasks.budgets import budget_holding, holds
from hub_tasks.caps import caps_admit, caps_releasable, caps_take, slots_free
from hub_tasks.counts import counts_changed
from hub_tasks.deadlines import deadline_may_lower, deadlines_raise, networks_past_deadline
from hub_tasks.models import (
    LEASED,
    POOL,
    TERMINAL,
    TRANSITIONS,
    UNTIL_RELEASED,
    WAITING,
    AttemptOutcome,
    Budget,
    InboxMessage,
    Move,
    OnDependencyFailure,
    OnLost,
    Priority,
    Task,
    TaskAttempt,
    TaskDependency,
    TaskEvent,
    TaskStatus,
    priority_rank,
)

HUB = "hub"
# With its agent: the statuses in which a task holds a slot of each cap it matches (hub_tasks.caps).
WITH_AGENT = frozenset({TaskStatus.DELIVERED, TaskStatus.ACKED, TaskStatus.RUNNING})

# The moves that send a task again, as commhub_task_retries_total counts them.
_RETRY_KINDS = {Move.BACKOFF: "automatic", Move.RETRY: "manual"}

_ANNOUNCED_AS = {
    InboxMessage.Type.TASK: EventType.NEW_TASK,
    InboxMessage.Type.MESSAGE: EventType.NEW_MESSAGE,
    InboxMessage.Type.REPLY: EventType.NEW_REPLY,
    InboxMessage.Type.BROADCAST: EventType.BROADCAST,
}


def task_transition(
    task: Task,
    move: Move,
    to: str,
    *,
    actor: str,
    now: datetime,
    detail: str = "",
    fields: Iterable[str] = (),
    notify: Iterable[str] = (),
    by: str | None = None,
    outcome: str | None = None,
) -> TaskEvent:
    """Move a locked task to `to`.

    `fields` names other attributes the caller already changed; `notify` adds aliases to the
    push beyond the task's sender and receiver (a reassigned task's old receiver); `by` names who
    ended the current attempt (an agent's alias, a sender), where that is not the actor's label;
    `outcome` how it ended, where that is not the status reached (a lapsed lease: "lost").
    """
    if not task.can(move, to):
        # Callers check first and raise the contract's own error; reaching here is a bug.
        raise AssertionError(f"{move} may not move task {task.task_id} from {task.status} to {to}")
    from_status = task.status
    task.status = to
    changed = {"status", *fields}
    if to == TaskStatus.DELIVERED:
        task.delivered_at, task.started_at, task.completed_at = now, None, None
        changed |= {"delivered_at", "started_at", "completed_at"}
    elif to == TaskStatus.RUNNING:
        task.started_at = now
        changed.add("started_at")
    elif to in TERMINAL:
        task.completed_at = now
        changed.add("completed_at")
    changed |= _lease_and_hold_follow(task, to, now)
    if to in TERMINAL or move in (Move.REASSIGN, Move.LEASE_LOST):
        # A finished or moved task must not be picked up again from an old inbox row.
        task.inbox_messages.filter(type=InboxMessage.Type.TASK, acked_at__isnull=True).update(acked_at=now)
    update(task, sorted(changed))
    counts_changed(task.network_id)
    if to in WAITING or task.lease_expires_at is not None:
        deadline_may_lower(task.network_id)
    _attempt_follow(task, move, to, by=by or actor, now=now, outcome=outcome)
    event = TaskEvent(task=task, from_status=from_status, to_status=to, actor=actor, detail=detail, created_at=now)
    insert(event)
    if move in _RETRY_KINDS:
        count_on_commit(RETRIES, network=task.network_id, kind=_RETRY_KINDS[move])
    publish(
        HubEvent(
            type=EventType.TASK_UPDATED,
            network_id=task.network_id,
            audience=tuple(dict.fromkeys([task.to_name, task.from_name, *notify])),
            payload={
                "task_id": task.task_id,
                "from_status": from_status,
                "to_status": to,
                "to_name": task.to_name,
                "from_name": task.from_name,
                "actor": actor,
            },
        )
    )
    if from_status in WITH_AGENT and to not in WITH_AGENT and slots_free(task):
        caps_release(task.network_id, now=now)
    if to in TERMINAL and not (to == TaskStatus.FAILED and _retries_left(task)):
        # Only an end counts: a failure with attempts left is held for its retry (task_after_failure).
        dependents_settle(task, now=now)
    return event


def caps_release(network_id: str, *, now: datetime) -> None:
    """Slots of the network's caps are free: deliver the waiting tasks that now fit (hub_tasks.caps)."""
    for task, cap in caps_releasable(network_id, now=now):
        _cap_deliver(task, f"a slot of cap {cap.label} free", now=now)


def cap_waiters_readmit(network_id: str, task_ids: list[str], *, now: datetime) -> None:
    """The cap these tasks waited for is gone: each, by priority then age, is delivered or waits for
    another full cap of its own."""
    waiting = Task.objects.filter(network_id=network_id, pk__in=task_ids, status=TaskStatus.CREATED)
    for task_id in waiting.order_by(priority_rank(), "created_at", "pk").values_list("pk", flat=True):
        task = Task.objects.select_for_update().get(pk=task_id)
        if task.status != TaskStatus.CREATED or task.waiting_cap is None:
            continue
        task.waiting_cap = None
        if cap_wait(task, now=now):
            task.save(update_fields=HOLD_FIELDS)
            continue
        _cap_deliver(task, "its cap removed", now=now)


def budget_waiters_release(network_id: str, *, now: datetime) -> int:
    """The tasks waiting for a budget that holds nothing now (raised, deleted, or its period turned):
    each, by priority then age, is delivered, or waits for another spent budget or a full cap of its
    own. The caller holds the network's caps' and budgets' row locks, in that order, so two releasers
    take turns; each task is locked skipping one another transaction holds (it re-admits it itself).
    How many were delivered."""
    holding = [b.pk for b in Budget.objects.filter(network_id=network_id, reached_for__isnull=False) if holds(b, now)]
    waiting = Task.objects.filter(network_id=network_id, waiting_budget__isnull=False, status=TaskStatus.CREATED)
    waiting = waiting.exclude(waiting_budget__in=holding).order_by(priority_rank(), "created_at", "pk")
    delivered = 0
    for task_id in waiting.values_list("pk", flat=True):
        task = Task.objects.select_for_update(skip_locked=True).filter(pk=task_id).first()
        if task is None or task.status != TaskStatus.CREATED or task.waiting_budget in (None, *holding):
            continue  # cancelled or moved while it waited, or held by another transaction now
        task.waiting_budget = None
        if cap_wait(task, now=now):
            task.save(update_fields=HOLD_FIELDS)
            continue
        _cap_deliver(task, "its budget allows it again", now=now)
        delivered += 1
    return delivered


def _cap_deliver(task: Task, why: str, *, now: datetime) -> None:
    first = task.delivered_at is None
    task.expires_at = now + _ttl(task)
    task.result = None
    task_transition(
        task, Move.RELEASE, TaskStatus.DELIVERED, actor=HUB, now=now, detail=why,
        fields=["expires_at", "result", "waiting_cap", "waiting_budget"],
    )  # fmt: skip
    task_deliver_again(task, now=now, message_id=task.task_id if first else None)


# What cap_wait may change on a task that waits: its callers save these.
HOLD_FIELDS = ["waiting_cap", "waiting_budget", "expires_at", "retry_at"]


def cap_wait(task: Task, *, now: datetime) -> bool:
    """Before a held task's delivery: whether a spent budget of its scope (hub_tasks.budgets) or a
    full cap makes it wait (its waiting_budget or waiting_cap set, its deadline counted from its
    release; the caller saves HOLD_FIELDS); if not, it takes its slots. The caps are locked first,
    then the budgets: the order every writer takes them in."""
    full, caps = caps_admit(task)
    spent = budget_holding(task, now=now)
    if full is None and spent is None:
        caps_take(task, caps, now=now)
        task.waiting_budget = None
        return False
    task.waiting_budget = spent.pk if spent is not None else None
    task.waiting_cap = full.pk if spent is None and full is not None else None
    task.expires_at = UNTIL_RELEASED
    task.retry_at = None  # a retry's time has come; now it waits for the slot or the budget only
    return True


def task_record_creation(task: Task, *, actor: str, now: datetime, detail: str) -> TaskEvent:
    """A just-saved task: its first history row and, if it was delivered, its first attempt (a held
    one's opens at its release)."""
    counts_changed(task.network_id)
    deadline_may_lower(task.network_id)
    if task.status == TaskStatus.DELIVERED:
        _attempt_open(task, now=now, first=True)
    event = TaskEvent(task=task, from_status="", to_status=task.status, actor=actor, detail=detail, created_at=now)
    insert(event)
    return event


def _attempt_open(task: Task, *, now: datetime, first: bool = False) -> TaskAttempt:
    # The caller holds the task's row lock (or just created it: `first`, number 1 without asking),
    # so the next number is ours.
    last = 0 if first else task.attempts.aggregate(last=Max("number"))["last"] or 0
    attempt = TaskAttempt(task=task, number=last + 1, alias=task.to_name, delivered_at=now)
    insert(attempt)
    return attempt


def _lease_and_hold_follow(task: Task, to: str, now: datetime) -> set[str]:
    """The lease runs while the task is acked or running (from each of those moves); retry_at holds
    only a created task. The fields this changed."""
    changed = set()
    lease_expires_at = now + task.lease if to in LEASED and task.lease is not None else None
    if lease_expires_at != task.lease_expires_at:
        task.lease_expires_at = lease_expires_at
        changed.add("lease_expires_at")
    if to != TaskStatus.CREATED and task.retry_at is not None:
        task.retry_at = None
        changed.add("retry_at")
    if to != TaskStatus.CREATED and task.dependencies_pending is not None:
        # Out of its hold another way (reassigned or cancelled while waiting): nothing holds it now.
        task.dependencies_pending = None
        changed.add("dependencies_pending")
    return changed


def _attempt_follow(task: Task, move: Move, to: str, *, by: str, now: datetime, outcome: str | None = None) -> None:
    """Keep the task's attempts in step with the status it just took (the one place they change)."""
    current = TaskAttempt.objects.filter(task=task, ended_at__isnull=True)
    if to in TERMINAL:
        current.update(ended_at=now, outcome=outcome or to, result=task.result, ended_by=by)
    elif to == TaskStatus.DELIVERED:
        # A retry opens the next attempt; a reassign (or a requeue) first ends the current one.
        current.update(ended_at=now, outcome=outcome or AttemptOutcome.REASSIGNED, ended_by=by)
        _attempt_open(task, now=now)
    elif to == TaskStatus.CREATED:
        # Back to waiting with an attempt open (a claimed task's lapsed lease returns it to the
        # pool): that attempt ends. (A held retry's ended at its failure; a never-delivered task
        # has none.)
        current.update(ended_at=now, outcome=outcome or AttemptOutcome.REASSIGNED, ended_by=by)
    elif to == TaskStatus.ACKED:
        if move == Move.CLAIM:  # an open task's first delivery: to its claimer, taken at once
            _attempt_open(task, now=now)
        current.filter(acked_at__isnull=True).update(acked_at=now)
    elif to == TaskStatus.RUNNING:
        current.update(started_at=now)


def inbox_deliver(
    *,
    network_id: str,
    to_alias: str,
    type: InboxMessage.Type,
    content: str,
    from_session: str,
    now: datetime,
    task: Task | None = None,
    priority: str = Priority.NORMAL,
    context: str | None = None,
    message_id: str | None = None,
) -> InboxMessage:
    """Write one inbox row and queue its push (tasks, messages, replies and broadcasts)."""
    message = InboxMessage(
        network_id=network_id,
        to_alias=to_alias,
        type=type,
        priority=priority,
        content=content,
        context=context,
        from_session=from_session,
        task=task,
        created_at=now,
    )
    if message_id is not None:
        message.id = message_id
    insert(message)
    if type in _ANNOUNCED_AS:
        publish(
            HubEvent(
                type=_ANNOUNCED_AS[type],
                network_id=network_id,
                audience=(to_alias,),
                payload={
                    "message_id": message.id,
                    "type": type,
                    "priority": priority,
                    "content": content,
                    "context": context,
                    "from_session": from_session,
                    "task_id": task.task_id if task else None,
                    "budget_usd": task.budget_usd if task else None,
                    "budget_tokens": task.budget_tokens if task else None,
                },
            )
        )
    return message


def _notice_to_sender(task: Task, news: str, *, now: datetime, to: str | None = None) -> InboxMessage:
    """A notice from the hub in the task's sender's inbox: "Task <id> to <alias>: <news>. Task: <excerpt>"
    (`to`: the alias it was with, when that is not its receiver now)."""
    excerpt = task.content if len(task.content) <= 200 else f"{task.content[:200]}…"
    separator = ": " if to is not None else " "
    return inbox_deliver(
        network_id=task.network_id,
        to_alias=task.from_name,
        type=InboxMessage.Type.NOTICE,
        content=f"Task {task.task_id} to {to or task.to_name}{separator}{news}. Task: {excerpt}",
        from_session=HUB,
        now=now,
        task=task,
    )


def open_task_announce(task: Task) -> list[str]:
    """Wake every agent whose skills cover an open task's required_skills (new_open_task, over SSE
    and channels); the aliases woken. Agents that never said their skills are not woken."""
    needed = set(task.required_skills or ())
    sessions = AgentSession.objects.filter(network_id=task.network_id, skills__isnull=False)
    able = sorted({alias for alias, skills in sessions.values_list("alias", "skills") if needed <= set(skills)})
    publish(
        HubEvent(
            type=EventType.NEW_OPEN_TASK,
            network_id=task.network_id,
            audience=tuple(able),
            payload={
                "task_id": task.task_id,
                "priority": task.priority,
                "content": task.content,
                "context": task.context,
                "from_session": task.from_name,
                "required_skills": task.required_skills,
            },
        )
    )
    return able


def task_expire(task: Task, *, now: datetime) -> None:
    """Expire a locked, overdue task and tell its sender, in their inbox and live."""
    # Named by its deadline, not a wait: a reassign re-delivers a task but keeps its deadline.
    missed = f"not done by its deadline {timestamp(task.expires_at)}"
    task_transition(task, Move.EXPIRE, TaskStatus.EXPIRED, actor=HUB, now=now, detail=missed)
    notice = _notice_to_sender(task, f"expired: {missed}. Use retry_task to send it again", now=now)
    publish(
        HubEvent(
            type=EventType.TASK_EXPIRED,
            network_id=task.network_id,
            audience=(task.from_name,),
            payload={
                "task_id": task.task_id,
                "to_name": task.to_name,
                "from_name": task.from_name,
                "message_id": notice.id,
            },
        )
    )


def tasks_expire_due(*, network_ids: Iterable[str], now: datetime | None = None) -> int:
    """Settle everything due in these networks (deadlines, lapsed leases, retries to release);
    returns how many tasks it settled."""
    now = now or timezone.now()
    networks = networks_past_deadline(network_ids, now)
    if not networks:  # the common case: nothing has fallen due, and no query was needed to know it
        return 0
    # A task waiting for a cap or a budget is released by those, never here (hub_tasks.deadlines).
    released = Q(status=TaskStatus.CREATED, waiting_cap=None, waiting_budget=None)
    due = Task.objects.filter(network_id__in=networks).filter(
        Q(status__in=WAITING, expires_at__lte=now)
        | (released & Q(retry_at__lte=now))
        | (released & Q(not_before__lte=now, delivered_at=None, dependencies_pending=None))
        | Q(status__in=LEASED, lease_expires_at__lte=now)
    )
    tasks: list[Task] = []
    if due.exists():  # what fell due may have been picked up, renewed or settled since
        with sealed_atomic():
            # Lock in primary-key order so two sweepers never deadlock; rows another sweeper settled
            # first no longer match the filter once its lock is released, and task_settle checks
            # each locked row again: every lapse is applied once, by one process.
            tasks = list(due.select_for_update().order_by("pk"))
            for task in tasks:
                task_settle(task, now=now)
    deadlines_raise(networks)
    return len(tasks)


def task_settle(task: Task, *, now: datetime) -> None:
    """Apply to a locked task what fell due by `now`, in the order it fell due: a lapsed lease,
    then a held retry's release, then its deadline."""
    if task.is_lease_lost(now):
        _lease_lost(task, now=now)
    if task.is_release_due(now):
        _release(task, now=now)
    if task.is_overdue(now):
        task_expire(task, now=now)


def _ttl(task: Task) -> timedelta:
    return timedelta(seconds=task.ttl_seconds or settings.COMMHUB_DEFAULT_TTL_SECONDS)


def _lease_lost(task: Task, *, now: datetime) -> None:
    """The agent went silent past its lease: requeue the task to it, or fail it (and maybe retry)."""
    alias = task.to_name
    lapsed = f"{alias} was silent past its lease of {task.lease_seconds} s"
    if task.on_lost == OnLost.REQUEUE and task.required_skills is not None:
        # Claimed from the open pool: back to the pool, for any agent with the skills to claim.
        task.expires_at, task.to_name = now + _ttl(task), POOL
        task_transition(
            task, Move.LEASE_LOST, TaskStatus.CREATED, actor=HUB, now=now, detail=f"{lapsed}: back in the open pool",
            fields=["expires_at", "to_name"], notify=[alias], by=HUB, outcome=AttemptOutcome.LOST,
        )  # fmt: skip
        open_task_announce(task)
        what, outcome = "back in the open pool", "reopened"
    elif task.on_lost == OnLost.REQUEUE:
        task.expires_at = now + _ttl(task)  # a fresh time to be picked up: counted from this delivery
        task_transition(
            task, Move.LEASE_LOST, TaskStatus.DELIVERED, actor=HUB, now=now, detail=f"{lapsed}: requeued",
            fields=["expires_at"], by=HUB, outcome=AttemptOutcome.LOST,
        )  # fmt: skip
        task_deliver_again(task, now=now)
        what, outcome = f"delivered to {alias} again as attempt {_attempts(task)}", "requeued"
    else:
        task.result = f"lease lost: {lapsed}"
        task_transition(
            task, Move.LEASE_LOST, TaskStatus.FAILED, actor=HUB, now=now, detail=f"{lapsed}: failed",
            fields=["result"], by=HUB, outcome=AttemptOutcome.LOST,
        )  # fmt: skip
        task_after_failure(task, now=now)
        held = task.is_held()
        what = f"retried at {timestamp(task.retry_at)}" if held else "failed"
        outcome = "retry_scheduled" if held else "failed"
    count_on_commit(LEASE_LAPSES, network=task.network_id, outcome=outcome)
    notice = _notice_to_sender(task, f"{lapsed}; {what}", now=now, to=alias)
    # Its own event besides task_updated: the sender (and a dashboard, an SSE consumer, a webhook)
    # sees that the agent went silent, not merely that the status moved; the agent, if it is
    # alive after all, learns the task is no longer its to finish under this attempt.
    publish(
        HubEvent(
            type=EventType.LEASE_LOST,
            network_id=task.network_id,
            audience=tuple(dict.fromkeys([task.from_name, alias])),
            payload={
                "task_id": task.task_id,
                "to_name": alias,
                "from_name": task.from_name,
                "lease_seconds": task.lease_seconds,
                "outcome": outcome,
                "retry_at": timestamp(task.retry_at) if task.retry_at else None,
                "message_id": notice.id,
            },
        )
    )


def _attempts(task: Task) -> int:
    return task.attempts.aggregate(last=Max("number"))["last"] or 0


def retry_delay(backoff_seconds: int, failed_attempt: int) -> timedelta:
    """How long a task waits after its `failed_attempt`-th attempt failed: backoff * 2^(n-1), capped,
    with jitter in its upper half (so each wait is at least as long as the previous one's lower bound
    and never zero, while agents failing together do not all come back at once)."""
    ceiling = min(limits.RETRY_DELAY_MAX, backoff_seconds * 2 ** (failed_attempt - 1))
    return timedelta(seconds=ceiling / 2 + _jitter.uniform(0, ceiling / 2))


_jitter = random.Random()


def _retries_left(task: Task) -> bool:
    """A failed task that task_after_failure holds for another attempt: one was made (a task failed
    before its first delivery failed no attempt) and it was not the last."""
    return task.max_attempts > 1 and 0 < _attempts(task) < task.max_attempts


def task_after_failure(task: Task, *, now: datetime) -> None:
    """A locked task that just failed: held for its next attempt if it has one left, else, if it had
    automatic retries, dead-lettered. A task sent without max_attempts simply stays failed, and so
    does one failed before its first delivery: no attempt failed (a retry would deliver it ahead of
    the dependencies or not_before it waited for)."""
    if task.max_attempts <= 1:
        return
    attempt = _attempts(task)
    if attempt == 0:
        return
    if attempt >= task.max_attempts:
        task.dead_lettered_at = now
        task.save(update_fields=["dead_lettered_at"])
        count_on_commit(DEAD_LETTERS, network=task.network_id)
        return
    delay = retry_delay(task.retry_backoff_seconds, attempt)
    task.retry_at = now + delay
    # Out of reach of expiry while held: its time to be picked up counts from its release.
    task.expires_at = task.retry_at + _ttl(task)
    task_transition(
        task, Move.BACKOFF, TaskStatus.CREATED, actor=HUB, now=now,
        detail=f"attempt {attempt} of {task.max_attempts} failed: retried in {delay.total_seconds():.0f} s",
        fields=["retry_at", "expires_at"],
    )  # fmt: skip


def _release(task: Task, *, now: datetime) -> None:
    """A held task's time has come: a retry delivered to its agent again, as a new attempt; a task
    that waited for its dependencies or its not_before delivered for the first time, its TTL counted
    from now."""
    if cap_wait(task, now=now):
        task.save(update_fields=HOLD_FIELDS)
        return
    first = task.delivered_at is None
    if first:
        why = "dependencies met" if task.dependencies.exists() else f"not_before {timestamp(task.not_before)} reached"
    else:
        why = f"automatic retry: attempt {_attempts(task) + 1} of {task.max_attempts}"
    task.expires_at = now + _ttl(task)
    task.result = None
    task_transition(
        task, Move.RELEASE, TaskStatus.DELIVERED, actor=HUB, now=now, detail=why, fields=["expires_at", "result"]
    )
    # The first delivery's inbox row carries the task's id, as send_task's own does (its message_id).
    task_deliver_again(task, now=now, message_id=task.task_id if first else None)


def dependents_settle(task: Task, *, now: datetime) -> None:
    """`task` just ended (replied, failed for good, cancelled or expired): each task waiting for it
    counts it met (replied, or on_dependency_failure "run") and is released once none is left, or is
    cancelled, naming it. Inside the transaction that ended it, which holds its lock."""
    waiting = TaskDependency.objects.filter(depends_on=task, settled_at__isnull=True)
    ids = list(waiting.values_list("task_id", flat=True))
    if not ids:
        return
    waiting.update(settled_at=now)
    # Locked in primary-key order, as the sweep locks: two transactions never wait on each other in a
    # cycle here (and the graph has none: a dependency always exists before its dependents).
    for dependent in list(Task.objects.select_for_update().filter(pk__in=ids).order_by("pk")):
        # Read again under the lock we hold: settling an earlier one may have ended this one already
        # (B waits for `task`, C for both: B's cancellation cancels C before the loop reaches it).
        dependent.refresh_from_db()
        if not dependent.dependencies_pending or dependent.status != TaskStatus.CREATED:
            continue  # cancelled or reassigned while it waited: nothing holds it any more
        if task.status == TaskStatus.REPLIED or dependent.on_dependency_failure == OnDependencyFailure.RUN:
            dependencies_count(dependent)
            if not dependent.is_held() or dependent.is_release_due(now):  # its not_before, if any, has come
                _release(dependent, now=now)
        else:
            dependency_failed(dependent, task, now=now)


def dependencies_count(task: Task) -> None:
    """Store how many of a locked task's dependencies have not ended (null: none)."""
    pending = TaskDependency.objects.filter(task=task, settled_at__isnull=True).count()
    task.dependencies_pending = pending or None
    task.save(update_fields=["dependencies_pending"])
    if task.dependencies_pending is None and task.scheduled_at is not None:
        deadline_may_lower(task.network_id)  # now it falls due at its not_before


def waits_for_its_work(task: Task, now: datetime) -> bool:
    """Whether a locked task that was never delivered must still wait (retry_task, reassign_task):
    for a dependency that has not ended (counted into dependencies_pending) or for its not_before.
    A task delivered once waits for neither again: both held only its first delivery."""
    if task.delivered_at is not None:
        return False
    pending = TaskDependency.objects.filter(task=task, settled_at__isnull=True).count()
    task.dependencies_pending = pending or None
    return bool(pending) or (task.not_before is not None and task.not_before > now)


def dependency_failed(task: Task, dependency: Task, *, now: datetime) -> None:
    """A locked, waiting task whose dependency ended without a reply: cancelled, its sender told."""
    reason = f"dependency {dependency.task_id} {dependency.status}"
    task_transition(task, Move.CANCEL, TaskStatus.CANCELLED, actor=HUB, now=now, detail=reason, by=HUB)
    _notice_to_sender(task, f"cancelled: {reason}. Send it again once the work it needs is done", now=now)


def task_deliver_again(task: Task, *, now: datetime, message_id: str | None = None) -> InboxMessage:
    """A new inbox row for a task delivered anew (a retry, a reassign, a requeue, a release): its
    agent is woken as for a new task."""
    return inbox_deliver(
        message_id=message_id,
        network_id=task.network_id,
        to_alias=task.to_name,
        type=InboxMessage.Type.TASK,
        content=task.content,
        from_session=task.from_name,
        now=now,
        task=task,
        priority=task.priority,
        context=task.context,
    )


def leases_renew(*, network_ids: Iterable[str], alias: str, now: datetime | None = None) -> int:
    """Any call by an agent renews every lease it holds: one UPDATE (a read first where that is cheaper).

    Only leases still running: one that lapsed is settled (by the caller, first), not revived.
    A later lease_expires_at never fires the deadline triggers (migration 0004).
    """
    now = now or timezone.now()
    held = Task.objects.filter(
        network_id__in=list(network_ids), to_name=alias, status__in=LEASED, lease_expires_at__gt=now
    )
    # On SQLite, read first: most agents hold no lease, and there even an UPDATE that matches nothing
    # takes the database's write lock (get_inbox, a read, would queue behind every writer). On
    # PostgreSQL an UPDATE that matches nothing costs what the read would.
    if connection.vendor == "sqlite" and not held.exists():
        return 0
    return held.update(lease_expires_at=ExpressionWrapper(Value(now) + F("lease"), output_field=DateTimeField()))


def task_start_for_alias(*, actor_label: str, network_id: str, alias: str, task_ref: str, now: datetime) -> None:
    """report_status working + task: the alias's delivered/acked task named by id, else by content, runs.

    The caller settles deadlines first, so a match by content never picks an overdue task.
    """
    sources, _ = TRANSITIONS[Move.START]
    waiting = Task.objects.select_for_update().filter(network_id=network_id, to_name=alias, status__in=sources)
    task = (
        waiting.filter(pk=task_ref).first() or waiting.filter(content=task_ref).order_by("-created_at", "-pk").first()
    )
    if task is not None:
        task_transition(
            task, Move.START, TaskStatus.RUNNING, actor=actor_label, now=now, detail=f"{alias} reported working"
        )
