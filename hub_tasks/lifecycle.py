"""The single path by which a task changes state or an inbox row is written.

Every status change goes through `task_transition`: it checks the move against the transition
table, stamps the times, withdraws inbox rows of a task that has ended, opens and closes its
attempts (TaskAttempt: one per delivery, kept whole across retries), writes the TaskEvent and
queues the push, all inside the caller's transaction.

Expiry is a deadline, not a job: `tasks_expire_due` settles overdue tasks and is called at the
start of every read and write that could show one, so no caller ever sees a stale "delivered".
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from hub_core.events import EventType, HubEvent, publish
from hub_core.formats import timestamp
from hub_tasks.models import (
    TERMINAL,
    TRANSITIONS,
    AttemptOutcome,
    InboxMessage,
    Move,
    Priority,
    Task,
    TaskAttempt,
    TaskEvent,
    TaskStatus,
)

HUB = "hub"

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
) -> TaskEvent:
    """Move a locked task to `to`.

    `fields` names other attributes the caller already changed; `notify` adds aliases to the
    push beyond the task's sender and receiver (a reassigned task's old receiver); `by` names who
    ended the current attempt (an agent's alias, a sender), where that is not the actor's label.
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
    if to in TERMINAL or move == Move.REASSIGN:
        # A finished or moved task must not be picked up again from an old inbox row.
        task.inbox_messages.filter(type=InboxMessage.Type.TASK, acked_at__isnull=True).update(acked_at=now)
    task.save(update_fields=sorted(changed))
    _attempt_follow(task, to, by=by or actor, now=now)
    event = TaskEvent.objects.create(
        task=task, from_status=from_status, to_status=to, actor=actor, detail=detail, created_at=now
    )
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
    return event


def task_record_creation(task: Task, *, actor: str, now: datetime, detail: str) -> TaskEvent:
    """A just-saved, delivered task: its first history row and its first attempt."""
    _attempt_open(task, now=now)
    return TaskEvent.objects.create(
        task=task, from_status="", to_status=task.status, actor=actor, detail=detail, created_at=now
    )


def _attempt_open(task: Task, *, now: datetime) -> TaskAttempt:
    # The caller holds the task's row lock (or just created it), so the next number is ours.
    last = task.attempts.aggregate(last=Max("number"))["last"] or 0
    return TaskAttempt.objects.create(task=task, number=last + 1, alias=task.to_name, delivered_at=now)


def _attempt_follow(task: Task, to: str, *, by: str, now: datetime) -> None:
    """Keep the task's attempts in step with the status it just took (the one place they change)."""
    current = TaskAttempt.objects.filter(task=task, ended_at__isnull=True)
    if to in TERMINAL:
        current.update(ended_at=now, outcome=to, result=task.result, ended_by=by)
    elif to == TaskStatus.DELIVERED:
        # A retry opens the next attempt; a reassign first ends the current one, handed on.
        current.update(ended_at=now, outcome=AttemptOutcome.REASSIGNED, ended_by=by)
        _attempt_open(task, now=now)
    elif to == TaskStatus.ACKED:
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
    message.save(force_insert=True)
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
                    "from_session": from_session,
                    "task_id": task.task_id if task else None,
                },
            )
        )
    return message


def task_expire(task: Task, *, now: datetime) -> None:
    """Expire a locked, overdue task and tell its sender, in their inbox and live."""
    # Named by its deadline, not a wait: a reassign re-delivers a task but keeps its deadline.
    missed = f"not done by its deadline {timestamp(task.expires_at)}"
    task_transition(task, Move.EXPIRE, TaskStatus.EXPIRED, actor=HUB, now=now, detail=missed)
    excerpt = task.content if len(task.content) <= 200 else f"{task.content[:200]}…"
    notice = inbox_deliver(
        network_id=task.network_id,
        to_alias=task.from_name,
        type=InboxMessage.Type.NOTICE,
        content=f"Task {task.task_id} to {task.to_name} expired: {missed}. "
        f"Use retry_task to send it again. Task: {excerpt}",
        from_session=HUB,
        now=now,
        task=task,
    )
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
    """Expire every overdue task in these networks; returns how many it expired."""
    now = now or timezone.now()
    sources, _ = TRANSITIONS[Move.EXPIRE]
    overdue = Task.objects.filter(network_id__in=list(network_ids), status__in=sources, expires_at__lte=now)
    if not overdue.exists():  # the common case: one indexed probe, no write transaction
        return 0
    with transaction.atomic():
        # Lock in primary-key order so two sweepers never deadlock; rows another sweeper expired
        # first no longer match the filter once its lock is released.
        tasks = list(overdue.select_for_update().order_by("pk"))
        for task in tasks:
            task_expire(task, now=now)
    return len(tasks)


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
