"""Every write about tasks, messages and completions: one function per tool.

Arguments arrive parsed and within their limits (hub_tools parses each tool's arguments from its
spec); each service checks what only the database can tell (the task exists, the actor may write it,
its status allows the move), returns a plain result (hub_tasks.results) and raises HubError for a
refusal. Tasks are locked before they are checked, and before any of their inbox rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models.expressions import RawSQL
from django.utils import timezone

from hub_agents import identity
from hub_agents.actor_cache import network_default_lease
from hub_agents.actors import Actor
from hub_agents.audit import audit_record
from hub_agents.models import AgentSession, AuditEntry, SessionStatus
from hub_agents.selectors import offline_cutoff, session_status_of, status_of_sql, with_effective_status
from hub_agents.services import session_lock, session_set_idle
from hub_core import validate
from hub_core.errors import HubError
from hub_core.events import EventType, HubEvent, publish, sealed_atomic
from hub_core.metrics import deliveries_observe
from hub_core.sql import insert, placeholders, stamp
from hub_tasks import limits
from hub_tasks.acks import message_ack_once, untasked_acked
from hub_tasks.budgets import budget_exhausted, budget_holding, scope_aliases
from hub_tasks.caps import caps_admit, caps_take
from hub_tasks.errors import task_not_found, task_terminal
from hub_tasks.lifecycle import (
    HOLD_FIELDS,
    HUB,
    cap_wait,
    dependency_failed,
    inbox_deliver,
    leases_renew,
    open_task_announce,
    task_after_failure,
    task_deliver_again,
    task_record_creation,
    task_settle,
    task_transition,
    tasks_expire_due,
    waits_for_its_work,
)
from hub_tasks.models import (
    POOL,
    TERMINAL,
    TRANSITIONS,
    UNTIL_RELEASED,
    Budget,
    Cap,
    Completion,
    DeliveredVia,
    InboxMessage,
    Move,
    OnDependencyFailure,
    OnLimit,
    OnLost,
    Priority,
    Task,
    TaskDependency,
    TaskStatus,
)
from hub_tasks.reads import FOLDS_RENEWAL, CursorDriver, run_now
from hub_tasks.results import (
    CompletionRecorded,
    Delivery,
    TaskAcked,
    TaskReassigned,
    TaskRetried,
    TaskSent,
)
from hub_tasks.usage import RunUsage, usage_attempt, usage_record, usage_required_task


def _delivery(message_id: str, network_id: str, alias: str, now: datetime) -> Delivery:
    return _delivery_as(message_id, network_id, alias, session_status_of(network_id=network_id, alias=alias, now=now))


def _status_query(alias: str, now: datetime) -> RawSQL:
    """session_status_of of the alias in the task's network, as a subquery of the task's read."""
    return RawSQL(f"({status_of_sql(f'{Task._meta.db_table}.network_id')})", [stamp(offline_cutoff(now)), alias])


def _delivery_as(message_id: str, network_id: str, alias: str, status: str | None) -> Delivery:
    """The answer of a delivery to an alias whose status (as everyone reads it) is `status`."""
    if status is not None:
        return Delivery(message_id, status)
    return Delivery(
        message_id,
        None,
        warning=(
            f"No agent named {alias!r} has reported in network {network_id} yet; "
            "the message waits in its inbox until one does. Check the alias if that is unexpected."
        ),
    )


def _lock_task(actor: Actor, task_id: str, now: datetime, *, status_of: str | None = None) -> Task | None:
    """The task, locked, if the actor can see it; what fell due (its deadline, lease, retry) settled first.
    `status_of`: an alias whose status in the task's network the same read answers (`receiver_status`,
    as _delivery reads it: send_reply's answer)."""
    tasks = Task.objects.select_for_update().filter(network_id__in=actor.readable_networks(), pk=task_id)
    if status_of is not None:
        tasks = tasks.annotate(receiver_status=_status_query(status_of, now))
    task = tasks.first()
    if task is not None:
        task_settle(task, now=now)
    return task


def _writable_task(actor: Actor, task_id: str, now: datetime) -> Task:
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


def _end_with_result(
    task: Task,
    move: Move,
    outcome: str,
    result: str,
    *,
    actor: Actor,
    now: datetime,
    detail: str,
    by: str,
    chain_from: str,
) -> None:
    """End the task with its result (stored truncated); a subtask's result goes up the chain. A failure
    with attempts left is held for its next attempt instead: only the last one goes up."""
    task.result = result[: limits.STORED_RESULT_MAX]
    task_transition(task, move, outcome, actor=actor.label, now=now, detail=detail, fields=["result"], by=by)
    if outcome == TaskStatus.FAILED:
        task_after_failure(task, now=now)
    if task.parent_task_id and task.status in TERMINAL:
        _chain_reply(task, from_alias=chain_from, now=now)


@sealed_atomic
def task_send(
    *,
    actor: Actor,
    alias: str,
    task: str,
    priority: str = Priority.NORMAL,
    context: str | None = None,
    from_session: str | None = None,
    ttl_seconds: int | None = None,
    network_id: str | None = None,
    parent_task_id: str | None = None,
    client_request_id: str | None = None,
    lease_seconds: int | None = None,
    on_lost: str = OnLost.REQUEUE,
    max_attempts: int = 1,
    retry_backoff_seconds: int = limits.RETRY_BACKOFF_DEFAULT,
    depends_on: list[str] | None = None,
    on_dependency_failure: str = OnDependencyFailure.CANCEL,
    not_before: datetime | None = None,
    not_before_seconds: int | None = None,
    required_skills: list[str] | None = None,
    budget_usd: float | None = None,
    budget_tokens: int | None = None,
) -> TaskSent:
    """send_task: a task into the alias's inbox, delivered at once, or held `created` (no inbox row,
    no attempt) until every task it depends_on is replied and its not_before has come.

    Leased (lease_seconds, else the network's default lease, else none) once acked; retried
    automatically after a failure while it has attempts left (max_attempts, default 1: never).

    With required_skills (and alias "pool") an open task: created, in no inbox, every agent whose
    skills cover it woken (new_open_task) to claim it (claim_task); its TTL counts from now.

    budget_usd / budget_tokens cap each run of it; the agent's node enforces them, the hub carries
    them (get_task, the task's inbox rows)."""
    content, sender, parent_id, request_id = task, from_session or HUB, parent_task_id, client_request_id
    ttl = ttl_seconds or settings.COMMHUB_DEFAULT_TTL_SECONDS
    network = actor.writable_network(network_id)
    if required_skills is not None:
        _check_open_task(alias, depends_on, not_before, not_before_seconds)
    now = timezone.now()
    not_before = _not_before(not_before, not_before_seconds, now)
    dependencies = _dependencies_lock(network, depends_on or [], now)
    if lease_seconds is None:
        lease_seconds = network_default_lease(network)

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
        ttl_seconds=ttl,
        lease=None if lease_seconds is None else timedelta(seconds=lease_seconds),
        on_lost=on_lost,
        max_attempts=max_attempts,
        retry_backoff_seconds=retry_backoff_seconds,
        not_before=not_before,
        on_dependency_failure=on_dependency_failure,
        required_skills=required_skills,
        budget_usd=budget_usd,
        budget_tokens=budget_tokens,
    )
    # A dependency already replied is met; one that ended otherwise is met only with "run", else the
    # task is cancelled at once, naming it, as if it had ended while the task waited.
    failed = [d for d in dependencies if d.status in TERMINAL and d.status != TaskStatus.REPLIED]
    cancelled_by = failed[0] if failed and on_dependency_failure != OnDependencyFailure.RUN else None
    pending = sum(1 for d in dependencies if d.status not in TERMINAL)
    if required_skills is not None:
        new.status, new.delivered_at = TaskStatus.CREATED, None
    elif pending or cancelled_by or (not_before is not None and not_before > now):
        new.status, new.delivered_at = TaskStatus.CREATED, None
        new.dependencies_pending = pending or None
        new.expires_at = UNTIL_RELEASED  # its TTL counts from its release
    slots: list[Cap] = []
    full = None
    facts = _send_facts(new, now)
    if new.status == TaskStatus.DELIVERED and facts.caps:
        full, slots = caps_admit(new)  # locks the caps it matches
    # After the caps (their lock order), and only if one of its scope is marked reached.
    spent = budget_holding(new, now=now) if facts.budget_marked else None
    refused = spent if spent is not None and spent.on_limit == OnLimit.REFUSE else None
    if new.status == TaskStatus.DELIVERED and refused is None and (spent is not None or full is not None):
        # A spent budget of its scope, or beyond a cap: it waits (hub_tasks.budgets, hub_tasks.caps),
        # its TTL counted from its release.
        new.status, new.delivered_at, new.expires_at, slots = TaskStatus.CREATED, None, UNTIL_RELEASED, []
        new.waiting_budget = spent.pk if spent is not None else None
        new.waiting_cap = full.pk if spent is None and full is not None else None
    earlier = Task.objects.filter(network_id=network, sender_key=actor.key, client_request_id=request_id)
    if request_id is not None and (first := earlier.first()) is not None:
        return _repeated_send(first, new, now=now)
    if refused is not None:  # after the repeat's answer: a send that was taken stays taken
        raise budget_exhausted(refused, now=now)
    if request_id is None:
        insert(new)  # no request id, no twin to race: no savepoint
    else:
        try:
            with transaction.atomic():  # a savepoint: a concurrent twin with the same request id may win
                insert(new)
        except IntegrityError:
            return _repeated_send(earlier.get(), new, now=now)
    task_record_creation(new, actor=actor.label, now=now, detail=f"sent by {sender}")
    caps_take(new, slots, now=now)
    if dependencies:
        TaskDependency.objects.bulk_create(
            TaskDependency(task=new, depends_on=d, settled_at=now if d.status in TERMINAL else None)
            for d in dependencies
        )
    if new.is_open():
        able = open_task_announce(new)
        return TaskSent(new.task_id, _pool_delivery(new, able))
    if new.status == TaskStatus.CREATED:
        if cancelled_by is not None:
            dependency_failed(new, cancelled_by, now=now)
        return TaskSent(new.task_id, _delivery_as(new.task_id, network, alias, facts.status))
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
    return TaskSent(new.task_id, _delivery_as(new.task_id, network, alias, facts.status))


@dataclass(frozen=True, slots=True)
class _SendFacts:
    caps: bool  # the network has caps (caps_admit reads and locks those the task matches)
    budget_marked: bool  # a budget of the task's scope is marked reached (budget_holding says if it holds now)
    status: str | None  # the receiver's status as everyone reads it, for the answer (None: never reported)


def _send_facts(task: Task, now: datetime) -> _SendFacts:
    """What send_task asks before its writes, in one statement instead of three: the two cheap
    checks in front of caps_admit and budget_holding (each, when it finds something, reads again
    exactly, under its locks, in the caps-then-budgets order) and the receiver's status for the
    answer. The send changes no session, so the status read first is the one read last. Written as
    SQL (both databases): compiled by the ORM it cost more than its round trip."""
    scope = scope_aliases(task)
    sql = (
        f"SELECT EXISTS (SELECT 1 FROM {Cap._meta.db_table} WHERE network_id = %s),"
        f" EXISTS (SELECT 1 FROM {Budget._meta.db_table} WHERE network_id = %s"
        f" AND alias IN ({placeholders(len(scope))}) AND reached_for IS NOT NULL),"
        f" ({status_of_sql()})"
    )
    network, alias = task.network_id, task.to_name
    with connection.cursor() as cursor:
        cursor.execute(sql, [network, network, *scope, stamp(offline_cutoff(now)), network, alias])
        caps, budget_marked, status = cursor.fetchone()
    return _SendFacts(bool(caps), bool(budget_marked), status)


def _check_open_task(
    alias: str, depends_on: list[str] | None, not_before: datetime | None, not_before_seconds: int | None
) -> None:
    if alias != POOL:
        raise HubError(
            "pool_alias_required",
            f'required_skills posts an open task to the pool: send it with alias "{POOL}" (got {alias!r}), '
            "or leave required_skills out to send it to that agent.",
            status=409,
        )
    if depends_on or not_before is not None or not_before_seconds is not None:
        raise HubError(
            "open_task_held",
            "An open task cannot also wait for depends_on or not_before yet: post it to the pool when it is ready.",
            status=409,
        )


def _pool_delivery(task: Task, able: list[str]) -> Delivery:
    """send_task's answer for an open task: no agent's status (it is nobody's yet), and a warning
    while no agent has the skills it needs."""
    if able:
        return Delivery(task.task_id, None)
    needs = ", ".join(task.required_skills or ()) or "no particular skills"
    return Delivery(
        task.task_id,
        None,
        warning=(
            f"No agent has reported the skills it needs ({needs}) yet; it waits in the pool until one "
            "claims it or its TTL ends."
        ),
    )


def _not_before(not_before: datetime | None, seconds: int | None, now: datetime) -> datetime | None:
    """send_task's hold: until the not_before time, or not_before_seconds from now; given both, the
    later. Any time the schema admits is accepted (a past one holds nothing)."""
    after = now + timedelta(seconds=seconds) if seconds is not None else None
    held = [moment for moment in (not_before, after) if moment is not None]
    return max(held) if held else None


def _dependencies_lock(network: str, task_ids: list[str], now: datetime) -> list[Task]:
    """The tasks named in depends_on, locked in primary-key order and settled (a lapsed deadline
    counts), so none ends unseen between this read and the new task's commit: its end then finds the
    new task's TaskDependency row."""
    if not task_ids:
        return []  # most sends: no query to compile
    locked = Task.objects.select_for_update().filter(network_id=network, pk__in=task_ids).order_by("pk")
    found = {task.pk: task for task in locked}
    for task_id in task_ids:
        if task_id not in found:
            raise task_not_found(task_id)
    for task in found.values():
        task_settle(task, now=now)
    for task in found.values():
        # Settling one may have ended another (A expires, so B, waiting for A, is cancelled): read
        # each again under the lock this transaction holds, so the send sees what is now true.
        task.refresh_from_db()
    return [found[task_id] for task_id in task_ids]


# What makes two sends "the same task" for a repeated client_request_id.
_SAME_REQUEST = (
    "to_name", "content", "priority", "context", "from_name", "parent_task_id", "required_skills", "budget_usd",
    "budget_tokens",
)  # fmt: skip


def _repeated_send(first: Task, repeat: Task, *, now: datetime) -> TaskSent:
    differing = [field for field in _SAME_REQUEST if getattr(first, field) != getattr(repeat, field)]
    if differing:
        raise HubError(
            "idempotency_conflict",
            f"client_request_id {first.client_request_id!r} already sent task {first.task_id} with another "
            f"{', '.join(differing)}; use a new client_request_id for a new task.",
            status=409,
            task_id=first.task_id,
        )
    return TaskSent(first.task_id, _delivery(first.task_id, first.network_id, first.to_name, now), duplicate=True)


@sealed_atomic
def message_send(
    *, actor: Actor, alias: str, message: str, from_session: str | None = None, network_id: str | None = None
) -> Delivery:
    """send_message: show a message to the alias; it asks for no work."""
    network = actor.writable_network(network_id)
    now = timezone.now()
    row = inbox_deliver(
        network_id=network,
        to_alias=alias,
        type=InboxMessage.Type.MESSAGE,
        content=message,
        from_session=from_session or HUB,
        now=now,
    )
    return _delivery(row.id, network, alias, now)


@sealed_atomic
def reply_send(
    *,
    actor: Actor,
    alias: str,
    text: str,
    in_reply_to: str | None = None,
    status: str = TaskStatus.REPLIED,
    from_session: str | None = None,
    network_id: str | None = None,
    tokens_in: int | None = None,
    tokens_out: int | None = None,
    cost_usd: float | None = None,
    model: str | None = None,
) -> Delivery:
    """send_reply: answer a task (ending it with `status`, one of the REPLY move's outcomes) or a message.
    A run's usage (tokens, cost, model) is stored on the attempt the reply ends (hub_tasks.usage)."""
    body, reply_to, sender = text, in_reply_to, from_session or HUB
    usage = RunUsage(tokens_in, tokens_out, cost_usd, model)
    now = timezone.now()

    if reply_to is None:
        network, task = actor.writable_network(network_id), None
    else:
        network, task = _reply_target(actor, reply_to, now, alias)
        actor.check_write(network)
    if task is None:
        usage_required_task(usage)
    if task is not None:
        if not task.can(Move.REPLY):
            raise task_terminal(task.status, task_id=task.task_id)
        if task.is_open():  # nobody's yet: a reply would end it without a claim's checks
            raise HubError(
                "task_open",
                f"Task {task.task_id} is in the open pool, nobody's yet: claim it (claim_task) to work on it, "
                "or cancel it (cancel_task).",
                status=409,
                task_id=task.task_id,
            )
        # Without from_session the reply comes from the agent holding the task, not from "hub"
        # (the contract's default sender of the reply message itself).
        replier = from_session or task.to_name
        # Chosen before the reply ends it: the attempt of the agent holding the task.
        ran = usage_attempt(task, task.to_name) if usage else None
        _end_with_result(
            task, Move.REPLY, status, body, actor=actor, now=now, detail=f"reply from {replier}", by=replier,
            chain_from=sender,
        )  # fmt: skip
        usage_record(ran, network_id=task.network_id, usage=usage, now=now)
    row = inbox_deliver(
        network_id=network,
        to_alias=alias,
        type=InboxMessage.Type.REPLY,
        content=body,
        from_session=sender,
        now=now,
        task=task,
    )
    if task is not None and task.network_id == network:  # its lock read the receiver's status too
        return _delivery_as(row.id, network, alias, task.receiver_status)
    return _delivery(row.id, network, alias, now)


def _reply_target(actor: Actor, reply_to: str, now: datetime, alias: str) -> tuple[str, Task | None]:
    """The network and locked task a reply to `alias` answers; `reply_to` is a task id or an inbox
    message id."""
    task = _lock_task(actor, reply_to, now, status_of=alias)
    if task is not None:
        return task.network_id, task
    # An inbox row's id: a plain message (nothing to close) or a task's retry/reassign delivery.
    message = InboxMessage.objects.filter(network_id__in=actor.readable_networks(), pk=reply_to).first()
    if message is None:
        raise task_not_found(reply_to)
    return message.network_id, _lock_task(actor, message.task_id, now, status_of=alias) if message.task_id else None


@sealed_atomic
def task_ack(*, actor: Actor, task_id: str, from_session: str | None = None) -> TaskAcked:
    """send_ack: acknowledge a created/delivered task without touching any inbox."""
    sender = from_session or HUB
    now = timezone.now()
    task = _writable_task(actor, task_id, now)
    if task.status in TERMINAL:
        raise task_terminal(task.status, task_id=task.task_id, updated=0)
    if task.is_open():
        raise HubError(
            "task_open",
            f"Task {task.task_id} is in the open pool, nobody's yet: take it with claim_task.",
            status=409,
            task_id=task.task_id,
            updated=0,
        )
    if task.is_held():
        if task.retry_at is not None:
            waits = f"its automatic retry at {task.retry_at.isoformat()}"
        elif task.dependencies_pending:
            waits = f"{task.dependencies_pending} task(s) it depends on (get_task lists them)"
        else:
            waits = f"its not_before, {task.not_before.isoformat()}"
        raise HubError(
            "task_held",
            f"Task {task.task_id} waits for {waits}; it is "
            "delivered to its agent then (get_inbox), to be acknowledged from there.",
            status=409,
            task_id=task.task_id,
            updated=0,
        )
    updated = 1 if task.can(Move.SEND_ACK) else 0
    _first_read_and(task, now, Move.SEND_ACK, actor=actor, detail=f"acknowledged by {sender}")
    leases_renew(network_ids=[task.network_id], alias=from_session or task.to_name, now=now)
    return TaskAcked(task.task_id, updated)


@sealed_atomic
def inbox_ack(*, actor: Actor, alias: str, message_id: str, response: str | None = None) -> None:
    """ack_inbox: the alias has taken the message; a task message moves its task to acked.
    `response` is accepted and, as the contract says, not stored."""
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
    if message.task_id is None:  # no task to lock: the one write, the leases renewed with it where it folds them
        networks = [message.network_id]
        if not run_now(untasked_acked(CursorDriver(), networks=networks, alias=alias, message_id=message.pk, now=now)):
            raise _already_acked(message.pk, None)
        if connection.vendor not in FOLDS_RENEWAL:
            leases_renew(network_ids=networks, alias=alias, now=now)
        return
    task = _lock_task(actor, message.task_id, now)
    via = run_now(message_ack_once(CursorDriver(), message_id=message.pk, now=now))
    if via is None:
        raise _already_acked(message.pk, task)
    if message.type == InboxMessage.Type.TASK and message.delivered_to_agent_at is None and via == DeliveredVia.ACK:
        # Unread when we looked, and this ack its delivery receipt: only this ack could have written
        # "ack_inbox" (of two acks one wins the compare-and-swap).
        deliveries_observe([message.created_at], via=DeliveredVia.ACK, now=now)
    if task is not None and message.type == InboxMessage.Type.TASK:
        _first_read_and(task, now, Move.INBOX_ACK, actor=actor, detail=f"{alias} took message {message.id}")
    leases_renew(network_ids=[message.network_id], alias=alias, now=now)


def _already_acked(message_id: str, task: Task | None) -> HubError:
    why = f"its task is {task.status}" if task is not None and task.status in TERMINAL else "it was acknowledged"
    return HubError(
        "message_already_acked",
        f"Message {message_id} is no longer pending: {why}. get_inbox lists what is still waiting.",
        error="message not found or not yours",
        status=409,
    )


def _first_read_and(task: Task, now: datetime, move: Move, *, actor: Actor, detail: str) -> None:
    """A locked task its agent acknowledged: read by now, if no read was seen to deliver it first,
    and acked if it may be (`move`), in the one UPDATE of the task."""
    first = task.first_read_at is None
    if first:
        task.first_read_at = now
    if task.can(move):  # else acked or running: already acknowledged, nothing to do
        task_transition(
            task, move, TaskStatus.ACKED, actor=actor.label, now=now, detail=detail,
            fields=["first_read_at"] if first else (),
        )  # fmt: skip
    elif first:
        # first_read_at is in no trigger's column list (migrations 0003/0004): this fires none.
        Task.objects.filter(pk=task.pk).update(first_read_at=now)


def _audit_task(actor: Actor, task: Task, action: str, **detail: object) -> None:
    audit_record(network_id=task.network_id, action=action, actor=actor.label, target=f"task {task.task_id}", **detail)


@sealed_atomic
def task_retry(*, actor: Actor, task_id: str, from_session: str | None = None) -> TaskRetried:
    """retry_task: send a failed, expired or cancelled task again, same id, a fresh hour to live."""
    sender = from_session or HUB
    now = timezone.now()
    task = _writable_task(actor, task_id, now)
    if not task.can(Move.RETRY):
        raise HubError(
            "task_not_retryable",
            f"Only failed, expired or cancelled tasks can be retried; this one is {task.status}.",
            error=f"task status is {task.status}, not retryable",
            status=409,
        )
    task.result = None
    task.dead_lettered_at = None  # a person took the dead letter back
    # A task cancelled (or expired) before its first delivery goes back to waiting for what it
    # waited for; its TTL then counts from its release, and that delivery's row carries its id.
    # An open task nobody claimed goes back to the pool.
    reopens = task.to_name == POOL and task.required_skills is not None
    waits = not reopens and waits_for_its_work(task, now)
    task.expires_at = UNTIL_RELEASED if waits else now + limits.RETRY_TTL
    detail = f"retried by {sender}"
    if waits or reopens:
        detail += ": waits for its dependencies or not_before" if waits else ": back in the open pool"
    elif cap_wait(task, now=now):  # delivered at once, unless a spent budget or a full cap holds it
        waits = True
        detail += ": waits for its budget" if task.waiting_budget else ": waits for a slot of a cap"
    task_transition(
        task,
        Move.RETRY,
        TaskStatus.CREATED if waits or reopens else TaskStatus.DELIVERED,
        actor=actor.label,
        now=now,
        detail=detail,
        fields=["result", "dead_lettered_at", "dependencies_pending", *HOLD_FIELDS],
    )
    if reopens:
        open_task_announce(task)
    message_id = task.task_id if waits or reopens else task_deliver_again(task, now=now).id
    _audit_task(actor, task, AuditEntry.Action.TASK_RETRIED, to=task.to_name)
    return TaskRetried(task.task_id, task.to_name, message_id)


@sealed_atomic
def task_cancel(*, actor: Actor, task_id: str, reason: str | None = None, from_session: str | None = None) -> Task:
    """cancel_task: stop a task that has not finished; its pending inbox row is withdrawn."""
    sender = from_session or HUB
    now = timezone.now()
    task = _writable_task(actor, task_id, now)
    if not task.can(Move.CANCEL):
        raise task_terminal(task.status, task_id=task.task_id, cancelled=False)
    detail = f"cancelled by {sender}" + (f": {reason}" if reason else "")
    task_transition(task, Move.CANCEL, TaskStatus.CANCELLED, actor=actor.label, now=now, detail=detail, by=sender)
    _audit_task(actor, task, AuditEntry.Action.TASK_CANCELLED, reason=reason or "")
    return task


@sealed_atomic
def task_reassign(*, actor: Actor, task_id: str, new_alias: str, from_session: str | None = None) -> TaskReassigned:
    """reassign_task: hand an unfinished task to another alias, keeping its expiry."""
    sender = from_session or HUB
    now = timezone.now()
    task = _writable_task(actor, task_id, now)
    if not task.can(Move.REASSIGN):
        raise task_terminal(task.status, task_id=task.task_id)
    old_alias, task.to_name = task.to_name, new_alias
    # Who does the work changes, not when: a task waiting for its dependencies or its not_before
    # keeps waiting, for its new agent (a retry's backoff, the old agent's failure, ends here).
    waits = task.status == TaskStatus.CREATED and waits_for_its_work(task, now)
    if task.status == TaskStatus.CREATED and not waits:  # its first delivery, or a retry's: a cap may hold it
        capped = task.waiting_cap is not None or task.waiting_budget is not None
        task.waiting_cap = task.waiting_budget = None
        waits = cap_wait(task, now=now)
        if capped and not waits:  # its TTL counts from this delivery, as from a cap's release
            task.expires_at = now + timedelta(seconds=task.ttl_seconds or settings.COMMHUB_DEFAULT_TTL_SECONDS)
    task_transition(
        task,
        Move.REASSIGN,
        TaskStatus.CREATED if waits else TaskStatus.DELIVERED,
        actor=actor.label,
        now=now,
        detail=f"{old_alias} → {new_alias} by {sender}",
        fields=["to_name", "dependencies_pending", *HOLD_FIELDS],
        notify=[old_alias],
        by=sender,
    )
    _audit_task(actor, task, AuditEntry.Action.TASK_REASSIGNED, previous_alias=old_alias, to=new_alias)
    if waits:  # its release delivers it to new_alias, in a row that carries its id
        return TaskReassigned(
            task.task_id, old_alias, new_alias, _delivery(task.task_id, task.network_id, new_alias, now)
        )
    row = task_deliver_again(task, now=now)  # to new_alias: its to_name now
    if task.is_overdue(now):  # it kept a deadline that has passed: no process may read it as delivered
        task_settle(task, now=now)
    return TaskReassigned(task.task_id, old_alias, new_alias, _delivery(row.id, task.network_id, new_alias, now))


@sealed_atomic
def completion_report(
    *,
    actor: Actor,
    alias: str,
    task: str,
    result: str,
    artifacts: list[str] | None = None,
    score: float | None = None,
    duration_minutes: float | None = None,
    network_id: str | None = None,
    tokens_in: int | None = None,
    tokens_out: int | None = None,
    cost_usd: float | None = None,
    model: str | None = None,
) -> CompletionRecorded:
    """report_completion: record the work, close the task it names (`task`: its id or exact text),
    and set the alias idle. The run's usage and duration go on the alias's attempt of the task, the
    one it closes or (a failed run, ended by send_reply) the one it ended (hub_tasks.usage)."""
    task_ref = task
    network = actor.writable_network(network_id)

    sessions = session_lock(network_id=network, alias=alias)  # sessions before tasks, as report_status locks them
    now = timezone.now()  # after the lock: a completion that waited is not stamped before what it waited on
    # Settle deadlines first, so a match by content never picks a task that is already overdue.
    tasks_expire_due(network_ids=[network], now=now)
    matched = _match_completed_task(network, alias, task_ref)
    if matched is not None and matched.to_name != alias:
        # Matched by id, addressed to another agent: closing it is acting as that agent (a bound
        # token only for its own aliases; in an open network an unbound token, as the contract has it).
        identity.speak_as(actor, network, matched.to_name)
    completion = Completion(
        network_id=network,
        session_name=alias,
        task_text=task_ref,
        result=result,
        artifacts=Completion.artifacts_json(artifacts),
        score=score,
        duration_minutes=duration_minutes,
        task=matched,
        completed_at=now,
    )
    insert(completion)
    warning = None
    seconds = None if duration_minutes is None else duration_minutes * 60
    usage = RunUsage(tokens_in, tokens_out, cost_usd, model)
    # Only a report with something to store on the attempt asks which one it is (usage_record).
    reports = bool(usage) or seconds is not None
    ran = usage_attempt(matched, alias) if matched is not None and reports else None
    if matched is not None and matched.can(Move.COMPLETE):
        _end_with_result(
            matched, Move.COMPLETE, TaskStatus.REPLIED, result, actor=actor, now=now, detail=f"completed by {alias}",
            by=alias, chain_from=alias,
        )  # fmt: skip
    elif matched is not None:
        warning = f"Task {matched.task_id} is {matched.status}: the completion is recorded, the task unchanged."
    else:
        warning = (
            f"No task matches {validate.shown(task_ref)} in network {network} (neither a task_id nor the text of "
            f"an open task of {alias!r}): the completion is recorded without a task. Pass the task's task_id."
        )
    usage_record(ran, network_id=network, usage=usage, duration_seconds=seconds, now=now)
    leases_renew(network_ids=[network], alias=alias, now=now)
    session_set_idle(sessions, now=now)
    return CompletionRecorded(completion.id, matched and matched.task_id, warning)


def _match_completed_task(network: str, alias: str, task_ref: str) -> Task | None:
    """The task a completion closes: by id first (whoever it is addressed to now, as the contract
    says), else the alias's latest open task with that content."""
    tasks = Task.objects.select_for_update().filter(network_id=network)
    sources, _ = TRANSITIONS[Move.COMPLETE]
    return (
        tasks.filter(pk=task_ref).first()
        or tasks.filter(to_name=alias, content=task_ref, status__in=sources).order_by("-created_at", "-pk").first()
    )


@sealed_atomic
def broadcast_send(
    *,
    actor: Actor,
    message: str,
    filter_server: str | None = None,
    filter_status: str | None = None,
    network_id: str | None = None,
) -> list[str]:
    """broadcast: one inbox row from the hub for every online agent in the network that matches;
    the rows' ids, one per recipient."""
    body, server, status = message, filter_server, filter_status
    network = actor.writable_network(network_id)
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
    return ids
