"""What is asked and done: tasks, inbox messages, completions and the history of every task."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import models
from django.db.models import Case, IntegerField, Q, Value, When
from django.utils import timezone

from hub_agents.models import Network
from hub_core.formats import timestamp


def new_id() -> str:
    return str(uuid.uuid4())


class Priority(models.TextChoices):
    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"


class TaskStatus(models.TextChoices):
    CREATED = "created"
    DELIVERED = "delivered"
    ACKED = "acked"
    RUNNING = "running"
    REPLIED = "replied"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


S = TaskStatus
ACTIVE = frozenset({S.CREATED, S.DELIVERED, S.ACKED, S.RUNNING})
TERMINAL = frozenset({S.REPLIED, S.FAILED, S.CANCELLED, S.EXPIRED})


class Move(models.TextChoices):
    """Every operation that changes a task's status."""

    INBOX_ACK = "inbox_ack"  # ack_inbox: the agent took the message
    SEND_ACK = "send_ack"  # send_ack: lightweight acknowledgement, no inbox row
    START = "start"  # report_status working + task
    COMPLETE = "complete"  # report_completion
    REPLY = "reply"  # send_reply with in_reply_to
    CANCEL = "cancel"
    REASSIGN = "reassign"
    RETRY = "retry"
    EXPIRE = "expire"


# The one transition table: operation -> (statuses it may start from, statuses it may lead to).
TRANSITIONS: dict[Move, tuple[frozenset[str], frozenset[str]]] = {
    Move.INBOX_ACK: (frozenset({S.DELIVERED}), frozenset({S.ACKED})),
    Move.SEND_ACK: (frozenset({S.CREATED, S.DELIVERED}), frozenset({S.ACKED})),
    Move.START: (frozenset({S.DELIVERED, S.ACKED}), frozenset({S.RUNNING})),
    Move.COMPLETE: (frozenset({S.DELIVERED, S.ACKED, S.RUNNING}), frozenset({S.REPLIED})),
    Move.REPLY: (ACTIVE, frozenset({S.REPLIED, S.FAILED, S.CANCELLED})),
    Move.CANCEL: (ACTIVE, frozenset({S.CANCELLED})),
    Move.REASSIGN: (ACTIVE, frozenset({S.DELIVERED})),
    Move.RETRY: (frozenset({S.FAILED, S.EXPIRED, S.CANCELLED}), frozenset({S.DELIVERED})),
    Move.EXPIRE: (frozenset({S.CREATED, S.DELIVERED}), frozenset({S.EXPIRED})),
}


# get_task's whole row, in this order.
TASK_COLUMNS = (
    "task_id", "from_name", "to_name", "priority", "status", "content", "context", "result",
    "requires_response", "parent_task_id", "client_request_id", "created_by", "created_at",
    "delivered_at", "started_at", "completed_at", "expires_at", "network_id",
)  # fmt: skip


class Task(models.Model):
    task_id = models.CharField(primary_key=True, max_length=36, default=new_id, editable=False)
    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="tasks")
    from_name = models.CharField(max_length=200)
    to_name = models.CharField(max_length=200)
    priority = models.CharField(max_length=8, choices=Priority.choices, default=Priority.NORMAL)
    status = models.CharField(max_length=16, choices=TaskStatus.choices, default=TaskStatus.CREATED)
    content = models.TextField()
    context = models.TextField(null=True, blank=True)
    result = models.TextField(null=True, blank=True)
    requires_response = models.BooleanField(default=True)
    parent_task = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    created_by = models.CharField(max_length=300, help_text="The actor that sent the task.")
    # Idempotency: one task per (network, caller, client_request_id).
    sender_key = models.CharField(max_length=100)
    client_request_id = models.CharField(max_length=200, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["network", "sender_key", "client_request_id"],
                condition=Q(client_request_id__isnull=False),
                name="task_unique_client_request_id",
            )
        ]
        indexes = [
            models.Index(fields=["network", "-created_at"], name="task_network_created"),
            models.Index(fields=["network", "to_name", "status"], name="task_network_to_status"),
            models.Index(fields=["network", "from_name"], name="task_network_from"),
            # The expiry sweep looks only at tasks still waiting to be picked up.
            models.Index(
                fields=["network", "expires_at"],
                condition=Q(status__in=["created", "delivered"]),
                name="task_waiting_expiry",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task_id} → {self.to_name} ({self.status})"

    def can(self, move: Move, to: str | None = None) -> bool:
        sources, targets = TRANSITIONS[move]
        return self.status in sources and (to is None or to in targets)

    def is_overdue(self, now: datetime) -> bool:
        return self.can(Move.EXPIRE) and self.expires_at <= now

    def as_row(self, columns: Iterable[str] = TASK_COLUMNS) -> dict[str, Any]:
        row = {}
        for column in columns:
            value = getattr(self, column)
            row[column] = timestamp(value) if isinstance(value, datetime) else value
        return row


class InboxQuerySet(models.QuerySet["InboxMessage"]):
    def pending(self, *, network_ids: Iterable[str], alias: str) -> InboxQuerySet:
        return self.filter(network_id__in=list(network_ids), to_alias=alias, acked_at__isnull=True)

    def in_delivery_order(self) -> InboxQuerySet:
        """high > normal > low, then oldest first."""
        rank = Case(
            When(priority=Priority.HIGH, then=Value(0)),
            When(priority=Priority.NORMAL, then=Value(1)),
            default=Value(2),
            output_field=IntegerField(),
        )
        return self.order_by(rank, "created_at", "id")


class InboxMessage(models.Model):
    class Type(models.TextChoices):
        TASK = "task"
        MESSAGE = "message"
        REPLY = "reply"
        BROADCAST = "broadcast"
        CHAINED_REPLY = "chained_reply"
        NOTICE = "notice"  # from the hub itself, e.g. "your task expired"

    id = models.CharField(primary_key=True, max_length=36, default=new_id, editable=False)
    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="inbox_messages")
    to_alias = models.CharField(max_length=200)
    type = models.CharField(max_length=16, choices=Type.choices)
    priority = models.CharField(max_length=8, choices=Priority.choices, default=Priority.NORMAL)
    content = models.TextField()
    context = models.TextField(null=True, blank=True)
    from_session = models.CharField(max_length=200)
    task = models.ForeignKey(Task, null=True, blank=True, on_delete=models.CASCADE, related_name="inbox_messages")
    created_at = models.DateTimeField(default=timezone.now)
    acked_at = models.DateTimeField(null=True, blank=True)

    objects = InboxQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(
                fields=["network", "to_alias", "created_at"],
                condition=Q(acked_at__isnull=True),
                name="inbox_pending",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type} → {self.to_alias}"

    def as_row(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "priority": self.priority,
            "content": self.content,
            "context": self.context,
            "from_session": self.from_session,
            "task_id": self.task_id,
            "created_at": timestamp(self.created_at),
            "network_id": self.network_id,
        }


class Completion(models.Model):
    id = models.CharField(primary_key=True, max_length=36, default=new_id, editable=False)
    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="completions")
    session_name = models.CharField(max_length=200)
    task_text = models.TextField(db_column="task")
    result = models.TextField()
    # A JSON array string, exactly as the contract returns it.
    artifacts = models.TextField(null=True, blank=True)
    score = models.FloatField(null=True, blank=True)
    duration_minutes = models.FloatField(null=True, blank=True)
    task = models.ForeignKey(Task, null=True, blank=True, on_delete=models.SET_NULL, related_name="completions")
    completed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["network", "-completed_at"], name="completion_network_time"),
            models.Index(fields=["network", "session_name", "-completed_at"], name="completion_alias_time"),
        ]

    def __str__(self) -> str:
        return f"{self.session_name}: {self.task_text[:60]}"

    @staticmethod
    def artifacts_json(artifacts: list[str] | None) -> str | None:
        return None if artifacts is None else json.dumps(artifacts, ensure_ascii=False)

    def as_row(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "session_name": self.session_name,
            "task": self.task_text,
            "result": self.result,
            "artifacts": self.artifacts,
            "score": self.score,
            "duration_minutes": self.duration_minutes,
            "network_id": self.network_id,
            "completed_at": timestamp(self.completed_at),
        }


class TaskEvent(models.Model):
    """One row per status change of a task, written in the same transaction as the change."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="events")
    from_status = models.CharField(max_length=16, blank=True)  # blank: the task was just created
    to_status = models.CharField(max_length=16, choices=TaskStatus.choices)
    actor = models.CharField(max_length=300)
    detail = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["task", "id"], name="taskevent_task")]

    def __str__(self) -> str:
        return f"{self.task_id}: {self.from_status or '∅'} → {self.to_status}"

    def as_row(self) -> dict[str, Any]:
        return {
            "from_status": self.from_status or None,
            "to_status": self.to_status,
            "actor": self.actor,
            "detail": self.detail,
            "created_at": timestamp(self.created_at),
        }


class AttemptOutcome(models.TextChoices):
    """How an attempt ended: the task's terminal status, or handed on to another agent."""

    REPLIED = "replied"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    REASSIGNED = "reassigned"


class TaskAttempt(models.Model):
    """One delivery of a task to one agent, from delivery to its end (as CI shows re-runs).

    Opened and closed only by hub_tasks.lifecycle, in the transaction of the status change, so a
    retry keeps the failed attempt's result, who ended it and when.
    """

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()  # 1, 2, ... per task
    alias = models.CharField(max_length=200, help_text="The agent the task was delivered to.")
    delivered_at = models.DateTimeField()
    acked_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=AttemptOutcome.choices, blank=True)  # blank: still open
    result = models.TextField(null=True, blank=True)
    ended_by = models.CharField(max_length=300, blank=True, help_text="Who ended it: an agent alias or a sender.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "number"], name="taskattempt_task_number"),
            # At most one open attempt per task.
            models.UniqueConstraint(fields=["task"], condition=Q(ended_at__isnull=True), name="taskattempt_one_open"),
        ]

    def __str__(self) -> str:
        return f"{self.task_id} attempt {self.number} → {self.alias} ({self.outcome or 'open'})"

    def as_row(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "alias": self.alias,
            "outcome": self.outcome or None,
            "result": self.result,
            "ended_by": self.ended_by or None,
            "delivered_at": timestamp(self.delivered_at),
            "acked_at": timestamp(self.acked_at),
            "started_at": timestamp(self.started_at),
            "ended_at": timestamp(self.ended_at),
        }
