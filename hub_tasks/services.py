"""Every write about tasks, messages and completions: one function per tool.

Each returns the tool's result object from the contract (`{"ok": true, ...}`) and raises HubError
for a refusal. Tasks are locked before they are checked, and before any of their inbox rows.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from hub_agents import limits as agent_limits
from hub_agents.actors import Actor
from hub_agents.audit import audit_record
from hub_agents.models import AgentSession, AuditEntry, SessionStatus
from hub_agents.selectors import session_status_of, with_effective_status
from hub_agents.services import session_lock, session_set_idle
from hub_core import validate
from hub_core.errors import HubError, task_not_found, task_terminal
from hub_core.events import EventType, HubEvent, publish
from hub_tasks import limits
from hub_tasks.lifecycle import (
    HUB,
    inbox_deliver,
    task_expire,
    task_record_creation,
    task_transition,
    tasks_expire_due,
)
from hub_tasks.models import (
    TERMINAL,
    TRANSITIONS,
    Completion,
    InboxMessage,
    Move,
    Priority,
    Task,
    TaskStatus,
)
from hub_tasks.selectors import inbox_pending, task_rows, task_with_history


def _sender(from_session: object) -> str:
    return validate.identifier("from_session", from_session) or HUB


def _delivery_fields(network_id: str, alias: str, now: datetime) -> dict[str, Any]:
    status = session_status_of(network_id=network_id, alias=alias, now=now)
    fields: dict[str, Any] = {"session_status": status}
    if status is None:
        fields["warning"] = (
            f"No agent named {alias!r} has reported in network {network_id} yet; "
            "the message waits in its inbox until one does. Check the alias if that is unexpected."
        )
    return fields


def _lock_task(actor: Actor, task_id: str, now: datetime) -> Task | None:
    """The task, locked, if the actor can see it; an overdue one is expired first."""
    task = Task.objects.select_for_update().filter(network_id__in=actor.readable_networks(), pk=task_id).first()
    if task is not None and task.is_overdue(now):
        task_expire(task, now=now)
    return task


def _writable_task(actor: Actor, task_id: object, now: datetime, *, field: str = "task_id") -> Task:
    task_id = validate.required_identifier(field, task_id)
    task = _lock_task(actor, task_id, now)
    if task is None:
        raise task_not_found(task_id)
    actor.check_write(task.network_id)
    return task


def _chain_reply(child: Task, *, from_alias: str, now: datetime) -> None:
    """A child task's answer travels up the chain to whoever sent the parent task."""
    parent = Task.objects.filter(network_id=child.network_id, pk=child.parent_task_id).first()
    if parent is None:
        return
    message = inbox_deliver(
        network_id=parent.network_id,
        to_alias=parent.from_name,
        type=InboxMessage.Type.CHAINED_REPLY,
        content=child.result or "",
        from_session=from_alias,
        now=now,
        task=parent,
    )
    publish(
        HubEvent(
            type=EventType.CHAINED_REPLY,
            network_id=parent.network_id,
            audience=(parent.from_name,),
            payload={
                "parent_task_id": parent.task_id,
                "child_task_id": child.task_id,
                "from_alias": from_alias,
                "status": child.status,
                "result": child.result,
                "message_id": message.id,
            },
        )
    )


@transaction.atomic
def task_send(
    *,
    actor: Actor,
    alias: object,
    task: object,
    priority: object = None,
    context: object = None,
    from_session: object = None,
    ttl_seconds: object = None,
    network_id: object = None,
    parent_task_id: object = None,
    client_request_id: object = None,
) -> dict[str, Any]:
    """send_task: a task into the alias's inbox, delivered at once."""
    alias = validate.required_identifier("alias", alias)
    content = validate.required_text("task", task, max_len=validate.TEXT_MAX)
    priority = validate.choice("priority", priority, Priority.values, default=Priority.NORMAL)
    context = validate.text("context", context, max_len=validate.TEXT_MAX)
    sender = _sender(from_session)
    ttl = validate.whole_number(
        "ttl_seconds", ttl_seconds, low=1, high=limits.TTL_MAX, default=settings.COMMHUB_DEFAULT_TTL_SECONDS
    )
    parent_id = validate.identifier("parent_task_id", parent_task_id)
    request_id = validate.identifier("client_request_id", client_request_id)
    network = actor.writable_network(validate.identifier("network_id", network_id))
    now = timezone.now()

    parent = None
    if parent_id is not None:
        parent = Task.objects.filter(network_id=network, pk=parent_id).first()
        if parent is None:
            raise HubError(
                "parent_task_not_found",
                f"No task {parent_id!r} in network {network} to chain under; check parent_task_id.",
                error="parent task not found",
                status=404,
            )
    new = Task(
        network_id=network,
        from_name=sender,
        to_name=alias,
        priority=priority,
        status=TaskStatus.DELIVERED,
        content=content,
        context=context,
        parent_task=parent,
        created_by=actor.label,
        sender_key=actor.key,
        client_request_id=request_id,
        created_at=now,
        delivered_at=now,
        expires_at=now + timedelta(seconds=ttl),
    )
    earlier = Task.objects.filter(network_id=network, sender_key=actor.key, client_request_id=request_id)
    if request_id is not None and (first := earlier.first()) is not None:
        return _repeated_send(first, new, now=now)
    try:
        with transaction.atomic():  # a savepoint: a concurrent twin with the same request id may win
            new.save(force_insert=True)
    except IntegrityError:
        if request_id is None:
            raise
        return _repeated_send(earlier.get(), new, now=now)
    task_record_creation(new, actor=actor.label, now=now, detail=f"sent by {sender}")
    inbox_deliver(
        network_id=network,
        to_alias=alias,
        type=InboxMessage.Type.TASK,
        content=content,
        from_session=sender,
        now=now,
        task=new,
        priority=priority,
        context=context,
        message_id=new.task_id,
    )
    return {"ok": True, "message_id": new.task_id, "task_id": new.task_id, **_delivery_fields(network, alias, now)}


# What makes two sends "the same task" for a repeated client_request_id.
_SAME_REQUEST = ("to_name", "content", "priority", "context", "from_name", "parent_task_id")


def _repeated_send(first: Task, repeat: Task, *, now: datetime) -> dict[str, Any]:
    differing = [field for field in _SAME_REQUEST if getattr(first, field) != getattr(repeat, field)]
    if differing:
        raise HubError(
            "idempotency_conflict",
            f"client_request_id {first.client_request_id!r} already sent task {first.task_id} with another "
            f"{', '.join(differing)}; use a new client_request_id for a new task.",
            status=409,
            task_id=first.task_id,
        )
    return {
        "ok": True,
        "message_id": first.task_id,
        "task_id": first.task_id,
        "duplicate": True,
        **_delivery_fields(first.network_id, first.to_name, now),
    }


@transaction.atomic
def message_send(
    *, actor: Actor, alias: object, message: object, from_session: object = None, network_id: object = None
) -> dict[str, Any]:
    """send_message: show a message to the alias; it asks for no work."""
    alias = validate.required_identifier("alias", alias)
    body = validate.required_text("message", message, max_len=validate.TEXT_MAX)
    sender = _sender(from_session)
    network = actor.writable_network(validate.identifier("network_id", network_id))
    now = timezone.now()
    row = inbox_deliver(
        network_id=network,
        to_alias=alias,
        type=InboxMessage.Type.MESSAGE,
        content=body,
        from_session=sender,
        now=now,
    )
    return {"ok": True, "message_id": row.id, **_delivery_fields(network, alias, now)}


@transaction.atomic
def reply_send(
    *,
    actor: Actor,
    alias: object,
    text: object,
    in_reply_to: object = None,
    status: object = None,
    from_session: object = None,
    network_id: object = None,
) -> dict[str, Any]:
    """send_reply: answer a task (ending it with `status`) or a message."""
    alias = validate.required_identifier("alias", alias)
    body = validate.required_text("text", text, max_len=validate.TEXT_MAX)
    _, outcomes = TRANSITIONS[Move.REPLY]
    outcome = validate.choice("status", status, sorted(outcomes), default=TaskStatus.REPLIED)
    reply_to = validate.identifier("in_reply_to", in_reply_to)
    sender = _sender(from_session)
    now = timezone.now()

    if reply_to is None:
        network, task = actor.writable_network(validate.identifier("network_id", network_id)), None
    else:
        network, task = _reply_target(actor, reply_to, now)
        actor.check_write(network)
    if task is not None:
        if not task.can(Move.REPLY):
            raise task_terminal(task.status, task_id=task.task_id)
        task.result = body[: limits.STORED_RESULT_MAX]
        # Without from_session the reply comes from the agent holding the task, not from "hub"
        # (the contract's default sender of the reply message itself).
        replier = validate.identifier("from_session", from_session) or task.to_name
        task_transition(
            task,
            Move.REPLY,
            outcome,
            actor=actor.label,
            now=now,
            detail=f"reply from {replier}",
            fields=["result"],
            by=replier,
        )
        if task.parent_task_id:
            _chain_reply(task, from_alias=sender, now=now)
    row = inbox_deliver(
        network_id=network,
        to_alias=alias,
        type=InboxMessage.Type.REPLY,
        content=body,
        from_session=sender,
        now=now,
        task=task,
    )
    return {"ok": True, "message_id": row.id, **_delivery_fields(network, alias, now)}


def _reply_target(actor: Actor, reply_to: str, now: datetime) -> tuple[str, Task | None]:
    """The network and locked task a reply answers; `reply_to` is a task id or an inbox message id."""
    task = _lock_task(actor, reply_to, now)
    if task is not None:
        return task.network_id, task
    # An inbox row's id: a plain message (nothing to close) or a task's retry/reassign delivery.
    message = InboxMessage.objects.filter(network_id__in=actor.readable_networks(), pk=reply_to).first()
    if message is None:
        raise task_not_found(reply_to)
    return message.network_id, _lock_task(actor, message.task_id, now) if message.task_id else None


@transaction.atomic
def task_ack(*, actor: Actor, task_id: object, from_session: object = None) -> dict[str, Any]:
    """send_ack: acknowledge a created/delivered task without touching any inbox."""
    sender = _sender(from_session)
    now = timezone.now()
    task = _writable_task(actor, task_id, now)
    if task.status in TERMINAL:
        raise task_terminal(task.status, task_id=task.task_id, updated=0)
    updated = 0
    if task.can(Move.SEND_ACK):  # acked or running: already acknowledged, nothing to do
        task_transition(
            task, Move.SEND_ACK, TaskStatus.ACKED, actor=actor.label, now=now, detail=f"acknowledged by {sender}"
        )
        updated = 1
    return {"ok": True, "task_id": task.task_id, "updated": updated}


@transaction.atomic
def inbox_ack(*, actor: Actor, alias: object, message_id: object, response: object = None) -> dict[str, Any]:
    """ack_inbox: the alias has taken the message; a task message moves its task to acked."""
    alias = validate.required_identifier("alias", alias)
    message_id = validate.required_identifier("message_id", message_id)
    validate.text("response", response, max_len=validate.TEXT_MAX)  # accepted and, as the contract says, not stored
    message = InboxMessage.objects.filter(
        network_id__in=actor.readable_networks(), pk=message_id, to_alias=alias
    ).first()
    if message is None:
        raise HubError(
            "message_not_found",
            f"No message {message_id!r} for {alias!r}; get_inbox lists the messages waiting for you.",
            error="message not found or not yours",
            status=404,
        )
    actor.check_write(message.network_id)
    now = timezone.now()
    task = _lock_task(actor, message.task_id, now) if message.task_id else None
    # Compare-and-swap: of two concurrent acks exactly one flips acked_at.
    if not InboxMessage.objects.filter(pk=message.pk, acked_at__isnull=True).update(acked_at=now):
        why = f"its task is {task.status}" if task is not None and task.status in TERMINAL else "it was acknowledged"
        raise HubError(
            "message_already_acked",
            f"Message {message_id} is no longer pending: {why}. get_inbox lists what is still waiting.",
            error="message not found or not yours",
            status=409,
        )
    if task is not None and message.type == InboxMessage.Type.TASK and task.can(Move.INBOX_ACK):
        task_transition(
            task,
            Move.INBOX_ACK,
            TaskStatus.ACKED,
            actor=actor.label,
            now=now,
            detail=f"{alias} took message {message.id}",
        )
    return {"ok": True}


def _audit_task(actor: Actor, task: Task, action: str, **detail: Any) -> None:
    audit_record(network_id=task.network_id, action=action, actor=actor.label, target=f"task {task.task_id}", **detail)


@transaction.atomic
def task_retry(*, actor: Actor, task_id: object, from_session: object = None) -> dict[str, Any]:
    """retry_task: send a failed, expired or cancelled task again, same id, a fresh hour to live."""
    sender = _sender(from_session)
    now = timezone.now()
    task = _writable_task(actor, task_id, now)
    if not task.can(Move.RETRY):
        raise HubError(
            "task_not_retryable",
            f"Only failed, expired or cancelled tasks can be retried; this one is {task.status}.",
            error=f"task status is {task.status}, not retryable",
            status=409,
        )
    task.expires_at = now + limits.RETRY_TTL
    task.result = None
    task_transition(
        task,
        Move.RETRY,
        TaskStatus.DELIVERED,
        actor=actor.label,
        now=now,
        detail=f"retried by {sender}",
        fields=["expires_at", "result"],
    )
    row = inbox_deliver(
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
    _audit_task(actor, task, AuditEntry.Action.TASK_RETRIED, to=task.to_name)
    return {"ok": True, "task_id": task.task_id, "retried_to": task.to_name, "message_id": row.id}


@transaction.atomic
def task_cancel(*, actor: Actor, task_id: object, reason: object = None, from_session: object = None) -> dict[str, Any]:
    """cancel_task: stop a task that has not finished; its pending inbox row is withdrawn."""
    reason = validate.text("reason", reason, max_len=limits.REASON_MAX)
    sender = _sender(from_session)
    now = timezone.now()
    task = _writable_task(actor, task_id, now)
    if not task.can(Move.CANCEL):
        raise task_terminal(task.status, task_id=task.task_id, cancelled=False)
    detail = f"cancelled by {sender}" + (f": {reason}" if reason else "")
    task_transition(task, Move.CANCEL, TaskStatus.CANCELLED, actor=actor.label, now=now, detail=detail, by=sender)
    _audit_task(actor, task, AuditEntry.Action.TASK_CANCELLED, reason=reason or "")
    return {"ok": True, "task_id": task.task_id, "cancelled": True}


@transaction.atomic
def task_reassign(*, actor: Actor, task_id: object, new_alias: object, from_session: object = None) -> dict[str, Any]:
    """reassign_task: hand an unfinished task to another alias, keeping its expiry."""
    new_alias = validate.required_identifier("new_alias", new_alias)
    sender = _sender(from_session)
    now = timezone.now()
    task = _writable_task(actor, task_id, now)
    if not task.can(Move.REASSIGN):
        raise task_terminal(task.status, task_id=task.task_id)
    old_alias, task.to_name = task.to_name, new_alias
    task_transition(
        task,
        Move.REASSIGN,
        TaskStatus.DELIVERED,
        actor=actor.label,
        now=now,
        detail=f"{old_alias} → {new_alias} by {sender}",
        fields=["to_name"],
        notify=[old_alias],
        by=sender,
    )
    _audit_task(actor, task, AuditEntry.Action.TASK_REASSIGNED, previous_alias=old_alias, to=new_alias)
    row = inbox_deliver(
        network_id=task.network_id,
        to_alias=new_alias,
        type=InboxMessage.Type.TASK,
        content=task.content,
        from_session=task.from_name,
        now=now,
        task=task,
        priority=task.priority,
        context=task.context,
    )
    return {
        "ok": True,
        "task_id": task.task_id,
        "reassigned_from": old_alias,
        "reassigned_to": new_alias,
        "message_id": row.id,
        **_delivery_fields(task.network_id, new_alias, now),
    }


@transaction.atomic
def completion_report(
    *,
    actor: Actor,
    alias: object,
    task: object,
    result: object,
    artifacts: object = None,
    score: object = None,
    duration_minutes: object = None,
    network_id: object = None,
) -> dict[str, Any]:
    """report_completion: record the work, close the task it names, and set the alias idle."""
    alias = validate.required_identifier("alias", alias)
    task_ref = validate.required_text("task", task, max_len=validate.TEXT_MAX)
    result = validate.required_text("result", result, max_len=limits.RESULT_MAX)
    artifact_list = validate.string_list(
        "artifacts", artifacts, max_items=limits.ARTIFACTS_MAX, max_len=limits.ARTIFACT_MAX
    )
    score = validate.number("score", score, low=0, high=agent_limits.SCORE_MAX)
    duration = validate.number("duration_minutes", duration_minutes, low=0, high=limits.DURATION_MAX)
    network = actor.writable_network(validate.identifier("network_id", network_id))
    now = timezone.now()

    session_lock(network_id=network, alias=alias)  # sessions before tasks, as report_status locks them
    # Settle deadlines first, so a match by content never picks a task that is already overdue.
    tasks_expire_due(network_ids=[network], now=now)
    matched = _match_completed_task(network, alias, task_ref)
    completion = Completion.objects.create(
        network_id=network,
        session_name=alias,
        task_text=task_ref,
        result=result,
        artifacts=Completion.artifacts_json(artifact_list),
        score=score,
        duration_minutes=duration,
        task=matched,
        completed_at=now,
    )
    outcome: dict[str, Any] = {"ok": True, "completion_id": completion.id, "task_id": matched and matched.task_id}
    if matched is not None and matched.can(Move.COMPLETE):
        matched.result = result[: limits.STORED_RESULT_MAX]
        task_transition(
            matched,
            Move.COMPLETE,
            TaskStatus.REPLIED,
            actor=actor.label,
            now=now,
            detail=f"completed by {alias}",
            fields=["result"],
            by=alias,
        )
        if matched.parent_task_id:
            _chain_reply(matched, from_alias=alias, now=now)
    elif matched is not None:
        outcome["warning"] = (
            f"Task {matched.task_id} is {matched.status}: the completion is recorded, the task unchanged."
        )
    session_set_idle(network_id=network, alias=alias, now=now)
    return outcome


def _match_completed_task(network: str, alias: str, task_ref: str) -> Task | None:
    """The task a completion closes: by id first (whoever it is addressed to now, as the contract
    says), else the alias's latest open task with that content."""
    tasks = Task.objects.select_for_update().filter(network_id=network)
    sources, _ = TRANSITIONS[Move.COMPLETE]
    return (
        tasks.filter(pk=task_ref).first()
        or tasks.filter(to_name=alias, content=task_ref, status__in=sources).order_by("-created_at", "-pk").first()
    )


@transaction.atomic
def broadcast_send(
    *,
    actor: Actor,
    message: object,
    filter_server: object = None,
    filter_status: object = None,
    network_id: object = None,
) -> dict[str, Any]:
    """broadcast: one inbox row from the hub for every online agent in the network that matches."""
    body = validate.required_text("message", message, max_len=validate.TEXT_MAX)
    server = validate.identifier("filter_server", filter_server)
    status = validate.choice("filter_status", filter_status, SessionStatus.values)
    network = actor.writable_network(validate.identifier("network_id", network_id))
    now = timezone.now()
    online = with_effective_status(AgentSession.objects.filter(network_id=network), now).exclude(
        effective_status=SessionStatus.OFFLINE
    )
    if server is not None:
        online = online.filter(server=server)
    if status is not None:
        online = online.filter(effective_status=status)
    aliases = sorted(set(online.values_list("alias", flat=True)))
    ids = [
        inbox_deliver(
            network_id=network,
            to_alias=alias,
            type=InboxMessage.Type.BROADCAST,
            content=body,
            from_session=HUB,
            now=now,
        ).id
        for alias in aliases
    ]
    audit_record(
        network_id=network,
        action=AuditEntry.Action.BROADCAST_SENT,
        actor=actor.label,
        target=f"{len(ids)} online agents",
        message=body[:200],
        filter_server=server,
        filter_status=status,
        recipients=aliases[:100],
    )
    return {"ok": True, "recipients": len(ids), "message_ids": ids}


# get_inbox, get_task and list_tasks show tasks that may be past their deadline. Each first settles
# the deadlines of what the caller may see (tasks_expire_due: a write, it expires tasks and tells
# their senders), then reads through its selector, so no caller sees a stale "delivered" and no
# selector writes.


def inbox_list(
    *, actor: Actor, alias: object, limit: object = None, network_id: object = None, wait_seconds: object = None
) -> dict[str, Any]:
    """get_inbox (a long-poll reads again through here, so each look settles deadlines anew)."""
    tasks_expire_due(network_ids=actor.readable_networks())
    return inbox_pending(actor=actor, alias=alias, limit=limit, network_id=network_id, wait_seconds=wait_seconds)


def task_get(*, actor: Actor, task_id: object) -> dict[str, Any]:
    """get_task."""
    tasks_expire_due(network_ids=actor.readable_networks())
    return task_with_history(actor=actor, task_id=task_id)


def task_list(
    *,
    actor: Actor,
    alias: object = None,
    status: object = None,
    from_name: object = None,
    network_id: object = None,
    limit: object = None,
) -> dict[str, Any]:
    """list_tasks."""
    tasks_expire_due(network_ids=actor.readable_networks())
    return task_rows(actor=actor, alias=alias, status=status, from_name=from_name, network_id=network_id, limit=limit)
