"""What is asked and done: tasks, inbox messages, completions and the history of every task."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
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
    LEASE_LOST = "lease_lost"  # the agent holding the task went silent past its lease
    BACKOFF = "backoff"  # a failure with attempts left: held until its retry is due
    RELEASE = "release"  # a held task's time has come: delivered again
    CLAIM = "claim"  # claim_task: an agent takes an open task from the pool


# The one transition table: operation -> (statuses it may start from, statuses it may lead to).
TRANSITIONS: dict[Move, tuple[frozenset[str], frozenset[str]]] = {
    Move.INBOX_ACK: (frozenset({S.DELIVERED}), frozenset({S.ACKED})),
    Move.SEND_ACK: (frozenset({S.CREATED, S.DELIVERED}), frozenset({S.ACKED})),
    Move.START: (frozenset({S.DELIVERED, S.ACKED}), frozenset({S.RUNNING})),
    Move.COMPLETE: (frozenset({S.DELIVERED, S.ACKED, S.RUNNING}), frozenset({S.REPLIED})),
    Move.REPLY: (ACTIVE, frozenset({S.REPLIED, S.FAILED, S.CANCELLED})),
    Move.CANCEL: (ACTIVE, frozenset({S.CANCELLED})),
    # To created: a task never delivered keeps waiting for its dependencies or its not_before (a
    # reassign changes who does the work, not when; a retry does not skip work still running).
    Move.REASSIGN: (ACTIVE, frozenset({S.DELIVERED, S.CREATED})),
    Move.RETRY: (frozenset({S.FAILED, S.EXPIRED, S.CANCELLED}), frozenset({S.DELIVERED, S.CREATED})),
    Move.EXPIRE: (frozenset({S.CREATED, S.DELIVERED}), frozenset({S.EXPIRED})),
    # on_lost requeue: delivered again to the same agent (a task claimed from the open pool: back
    # to the pool, created); fail: failed (and maybe retried, below).
    Move.LEASE_LOST: (frozenset({S.ACKED, S.RUNNING}), frozenset({S.DELIVERED, S.CREATED, S.FAILED})),
    Move.BACKOFF: (frozenset({S.FAILED}), frozenset({S.CREATED})),
    Move.RELEASE: (frozenset({S.CREATED}), frozenset({S.DELIVERED})),
    # An open task, taken: addressed to its claimer from then on, and acknowledged by the claim.
    Move.CLAIM: (frozenset({S.CREATED}), frozenset({S.ACKED})),
}
# The alias an open task is sent to (send_task with required_skills) and addressed to until claimed.
POOL = "pool"
# Waiting to be picked up: the statuses whose deadline counts (the database triggers of migration
# 0003 list them too, and tests/hub_tasks/test_deadlines.py holds the two to each other).
WAITING = TRANSITIONS[Move.EXPIRE][0]
# Leased to an agent: the statuses whose lease counts (migration 0004's triggers list them too).
LEASED = TRANSITIONS[Move.LEASE_LOST][0]


class OnDependencyFailure(models.TextChoices):
    """What the hub does with a waiting task when a task it depends on ends without a reply."""

    CANCEL = "cancel"
    RUN = "run"


# A task held for its dependencies has no deadline yet (its TTL counts from its release): this one,
# past every other, keeps it out of the expiry sweep and of the deadline triggers' minimum.
UNTIL_RELEASED = datetime(9999, 1, 1, tzinfo=UTC)


# Held before a first delivery, for dependencies, a not_before, a slot of a cap or a spent budget
# (list_tasks blocked).
BLOCKED = Q(status=TaskStatus.CREATED, retry_at__isnull=True) & (
    Q(dependencies_pending__isnull=False)
    | Q(not_before__isnull=False, delivered_at__isnull=True)
    | Q(waiting_cap__isnull=False)
    | Q(waiting_budget__isnull=False)
)


class OnLost(models.TextChoices):
    """What the hub does with a task whose lease lapsed."""

    REQUEUE = "requeue"
    FAIL = "fail"


# get_task's whole row, in this order.
TASK_COLUMNS = (
    "task_id", "from_name", "to_name", "priority", "status", "content", "context", "result",
    "requires_response", "parent_task_id", "client_request_id", "created_by", "created_at",
    "delivered_at", "started_at", "completed_at", "expires_at", "network_id",
    # Leases and automatic retries (beyond the contract: new keys only).
    "lease_seconds", "lease_expires_at", "on_lost", "max_attempts", "retry_backoff_seconds", "retry_at",
    "dead_lettered_at",
    # Delivery receipts: when the agent first read the task (its task message reached it).
    "first_read_at",
    # Dependencies and scheduled tasks (get_task adds depends_on and dependents: ids).
    "not_before", "on_dependency_failure", "dependencies_pending",
    # The open pool: what a claimer needs (null: an ordinary task).
    "required_skills",
    # Caps its agent's node enforces per run (null: none given); the hub only carries them.
    "budget_usd", "budget_tokens",
    # The concurrency cap whose slot it waits for (null: none; cap_list shows the caps).
    "waiting_cap",
    # The spent budget it waits for (null: none; budget_list shows the budgets).
    "waiting_budget",
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
    # Each delivery's time to be picked up, so a requeue or a retry gets it afresh (null: sent before
    # it was kept; such a task is never requeued or retried by the hub).
    ttl_seconds = models.PositiveIntegerField(null=True, blank=True)
    # Null: no lease, an acked or running task waits for its agent as long as it takes.
    lease = models.DurationField(null=True, blank=True, help_text="How long the agent may stay silent.")
    on_lost = models.CharField(max_length=8, choices=OnLost.choices, default=OnLost.REQUEUE)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    max_attempts = models.PositiveSmallIntegerField(default=1)
    retry_backoff_seconds = models.PositiveIntegerField(default=30)
    retry_at = models.DateTimeField(null=True, blank=True, help_text="A held (created) task is delivered then.")
    dead_lettered_at = models.DateTimeField(null=True, blank=True)
    # Nullable, so adding them never rebuilds the table on SQLite (which would drop the triggers).
    not_before = models.DateTimeField(null=True, blank=True, help_text="Not delivered before this time.")
    on_dependency_failure = models.CharField(
        max_length=8, choices=OnDependencyFailure.choices, null=True, blank=True, help_text="Null: cancel."
    )
    # How many of its dependencies have not ended yet (null: none): held created while set.
    dependencies_pending = models.PositiveIntegerField(null=True, blank=True)
    # Set once, when a task message of it first reaches its agent (hub_tasks.receipts); never moved.
    first_read_at = models.DateTimeField(null=True, blank=True, help_text="When its agent first read it.")
    # An open task (send_task to the pool): the skills a claimer must have. It waits `created`,
    # addressed to POOL, in no inbox, until an agent claims it (claim_task).
    required_skills = models.JSONField(null=True, blank=True)
    # send_task's caps on one run of it, enforced by the agent's node (the hub only carries them).
    budget_usd = models.FloatField(null=True, blank=True, help_text="At most this many USD per run.")
    budget_tokens = models.PositiveBigIntegerField(null=True, blank=True, help_text="At most this many tokens per run.")
    # The cap (its id) whose slot it waits for before its first delivery (null: none); hub_tasks.caps.
    # A plain id, not a foreign key: adding it never rebuilds the table on SQLite.
    waiting_cap = models.CharField(max_length=36, null=True, blank=True, help_text="Waits for a slot of this cap.")
    # The budget (its id) that is spent for its period, which its delivery waits for (null: none);
    # hub_tasks.budgets. A plain id too, for the same reason.
    waiting_budget = models.CharField(max_length=36, null=True, blank=True, help_text="Waits for this budget.")

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
            # A cap's release finds the tasks waiting for its slots.
            models.Index(fields=["waiting_cap"], condition=Q(waiting_cap__isnull=False), name="task_waiting_cap"),
            # ... and a budget's, the tasks waiting for it.
            models.Index(
                fields=["network", "waiting_budget"],
                condition=Q(waiting_budget__isnull=False),
                name="task_waiting_budget",
            ),
            # The expiry sweep looks only at tasks still waiting to be picked up.
            models.Index(
                fields=["network", "expires_at"],
                condition=Q(status__in=["created", "delivered"]),
                name="task_waiting_expiry",
            ),
            # ... and, for leases and held retries, only at tasks that have one.
            models.Index(
                fields=["network", "lease_expires_at"],
                condition=Q(status__in=["acked", "running"], lease_expires_at__isnull=False),
                name="task_leased",
            ),
            models.Index(
                fields=["network", "retry_at"],
                condition=Q(status="created", retry_at__isnull=False),
                name="task_held",
            ),
            models.Index(
                fields=["network", "not_before"],
                condition=Q(status="created", not_before__isnull=False),
                name="task_scheduled",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task_id} → {self.to_name} ({self.status})"

    def can(self, move: Move, to: str | None = None) -> bool:
        sources, targets = TRANSITIONS[move]
        return self.status in sources and (to is None or to in targets)

    @property
    def lease_seconds(self) -> int | None:
        return None if self.lease is None else int(self.lease.total_seconds())

    @property
    def scheduled_at(self) -> datetime | None:
        """not_before, while it still holds the task: only its first delivery waits for it."""
        return self.not_before if self.delivered_at is None else None

    def is_held(self) -> bool:
        """Out of every inbox until released: waiting out a retry's backoff (retry_at), for its
        dependencies, for its not_before, for a slot of a cap, or for a spent budget."""
        return self.status == TaskStatus.CREATED and (
            self.retry_at is not None
            or bool(self.dependencies_pending)
            or self.scheduled_at is not None
            or self.waiting_cap is not None
            or self.waiting_budget is not None
        )

    def is_open(self) -> bool:
        """In the open pool: sent with required_skills, not yet claimed (nor reassigned) or ended."""
        return self.status == TaskStatus.CREATED and self.to_name == POOL and self.required_skills is not None

    def is_overdue(self, now: datetime) -> bool:
        # A held task's deadline counts from its release (its expires_at is set past its hold).
        return self.can(Move.EXPIRE) and self.expires_at <= now and not self.is_held()

    def is_lease_lost(self, now: datetime) -> bool:
        return self.status in LEASED and self.lease_expires_at is not None and self.lease_expires_at <= now

    def is_release_due(self, now: datetime) -> bool:
        return (
            self.is_held()
            and not self.dependencies_pending
            and self.waiting_cap is None  # released by hub_tasks.caps as runs of its scope end
            and self.waiting_budget is None  # released when its budget is raised or its period turns
            and all(at is None or at <= now for at in (self.retry_at, self.scheduled_at))
        )

    def as_row(self, columns: Iterable[str] = TASK_COLUMNS) -> dict[str, Any]:
        row = {}
        for column in columns:
            value = getattr(self, column)
            row[column] = timestamp(value) if isinstance(value, datetime) else value
        return row


class TaskDependency(models.Model):
    """`task` waits for `depends_on` to be replied (send_task's depends_on); both in one network."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="dependencies")
    depends_on = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="dependents")
    # When depends_on ended (replied, or failed for good, cancelled, expired): null while it runs.
    settled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "depends_on"], name="taskdependency_unique")]
        indexes = [
            # A task that ends finds the dependents still waiting for it.
            models.Index(fields=["depends_on"], condition=Q(settled_at__isnull=True), name="taskdependency_waiting"),
        ]

    def __str__(self) -> str:
        return f"{self.task_id} after {self.depends_on_id}"


def priority_rank() -> Case:
    """0 for high, 1 for normal, 2 for low: what orders an inbox and the open pool."""
    return Case(
        When(priority=Priority.HIGH, then=Value(0)),
        When(priority=Priority.NORMAL, then=Value(1)),
        default=Value(2),
        output_field=IntegerField(),
    )


class InboxQuerySet(models.QuerySet["InboxMessage"]):
    def pending(self, *, network_ids: Iterable[str], alias: str) -> InboxQuerySet:
        return self.filter(network_id__in=list(network_ids), to_alias=alias, acked_at__isnull=True)

    def in_delivery_order(self) -> InboxQuerySet:
        """high > normal > low, then oldest first."""
        return self.order_by(priority_rank(), "created_at", "id")


class DeliveredVia(models.TextChoices):
    """The transport an inbox message first reached its agent over."""

    GET_INBOX = "get_inbox"  # get_inbox, plain or long-poll, over MCP or REST
    SSE = "sse"  # an event naming the message on the agent's /events stream
    ACK = "ack_inbox"  # acknowledged by id before any of the above was seen to deliver it


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
    # Delivery receipt: the first time the message reached its agent, and over which transport
    # (hub_tasks.receipts). Null: never delivered to the agent yet.
    delivered_to_agent_at = models.DateTimeField(null=True, blank=True)
    delivered_via = models.CharField(max_length=16, choices=DeliveredVia.choices, null=True, blank=True)

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
            # Beyond the contract (new keys): the message's delivery receipt.
            "delivered_at": timestamp(self.delivered_to_agent_at),
            "delivered_via": self.delivered_via,
            # A task message carries its task's caps for the run (null: none, or not a task).
            **self._budget(),
        }

    def _budget(self) -> dict[str, Any]:
        # Only a task message reads its task (get_inbox selects it with the message).
        task = self.task if self.type == InboxMessage.Type.TASK and self.task_id else None
        return {
            "budget_usd": task and task.budget_usd,
            "budget_tokens": task and task.budget_tokens,
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
    """A task's history, one row per change, written in the same transaction as the change: each
    status change, and each question asked about it and answered (which keep its status: such a row
    names the status the task stayed in, both ways)."""

    class Kind(models.TextChoices):
        STATUS = "status", "status change"
        QUESTION = "question", "question asked"
        ANSWER = "answer", "question answered"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.STATUS)
    from_status = models.CharField(max_length=16, blank=True)  # blank: the task was just created
    to_status = models.CharField(max_length=16, choices=TaskStatus.choices)
    actor = models.CharField(max_length=300)
    detail = models.TextField(blank=True)
    # The question a `question` or `answer` row is about.
    question = models.ForeignKey("Question", null=True, blank=True, on_delete=models.CASCADE, related_name="events")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["task", "id"], name="taskevent_task")]

    def __str__(self) -> str:
        return f"{self.task_id}: {self.from_status or '∅'} → {self.to_status}"

    def as_row(self) -> dict[str, Any]:
        row = {
            "kind": self.kind,
            "from_status": self.from_status or None,
            "to_status": self.to_status,
            "actor": self.actor,
            "detail": self.detail,
            "created_at": timestamp(self.created_at),
        }
        if self.question_id is not None:
            row["question_id"] = self.question_id
        return row


class TaskDeadline(models.Model):
    """Per network, a time no waiting task's deadline is earlier than: until it passes, nothing can expire.

    Database triggers (migration 0003) lower it in the transaction of every write that makes a task
    waiting or moves a waiting task's deadline, whichever code or SQL writes the row; the sweep
    raises it again (hub_tasks.deadlines). Null: no task in the network is waiting.
    """

    network = models.OneToOneField(Network, primary_key=True, on_delete=models.CASCADE, related_name="+")
    due_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.network_id}: {self.due_at}"


class TaskCount(models.Model):
    """Tasks by status per network, as rows to sum: `stats` without counting the task table.

    Database triggers (migration 0003) insert +1/-1 rows in the transaction of every insert, status
    change and delete of a task, whichever code or SQL writes it. Rows are only ever inserted, so
    concurrent writers never wait on each other here; hub_tasks.counts folds a network's rows into
    one per status now and then.
    """

    id = models.BigAutoField(primary_key=True)
    # No constraint in the database: its check would lock the network row for every status change.
    network = models.ForeignKey(Network, on_delete=models.CASCADE, db_constraint=False, related_name="+")
    status = models.CharField(max_length=16, choices=TaskStatus.choices)
    n = models.IntegerField()

    def __str__(self) -> str:
        return f"{self.network_id}: {self.status} {self.n:+d}"


class AttemptOutcome(models.TextChoices):
    """How an attempt ended: the task's terminal status, or handed on to another agent."""

    REPLIED = "replied"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    REASSIGNED = "reassigned"
    LOST = "lost"  # its lease lapsed: the agent went silent


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
    # What the run cost, as its agent reported it (report_completion, send_reply): each set once
    # (hub_tasks.usage), null until reported. Nullable, so adding them rebuilds no table.
    tokens_in = models.PositiveBigIntegerField(null=True, blank=True)
    tokens_out = models.PositiveBigIntegerField(null=True, blank=True)
    cost_usd = models.FloatField(null=True, blank=True)
    model = models.CharField(max_length=200, null=True, blank=True)
    duration_seconds = models.FloatField(null=True, blank=True)

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
            # The run's usage (beyond the contract: new keys), null until its agent reports it.
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost_usd": self.cost_usd,
            "model": self.model,
            "duration_seconds": self.duration_seconds,
        }


class Question(models.Model):
    """An agent's question to a person about the task it holds (ask_operator), and its answer.

    The task keeps its status: it is "waiting for input" while a question of it is open. The answer
    reaches the agent as a reply in its inbox, pushed like any reply (answer_message)."""

    id = models.CharField(primary_key=True, max_length=36, default=new_id, editable=False)
    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="questions")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="questions")
    asked_by = models.CharField(max_length=200, help_text="The alias of the agent that asked.")
    text = models.TextField()
    options = models.JSONField(null=True, blank=True, help_text="Answers to choose from; null: free text.")
    asked_at = models.DateTimeField()
    answer = models.TextField(null=True, blank=True)
    answered_by = models.CharField(max_length=300, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    answer_message = models.ForeignKey(InboxMessage, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        indexes = [
            # The dashboard's count of open questions, per network, on every page.
            models.Index(fields=["network"], condition=Q(answered_at__isnull=True), name="question_open"),
        ]

    def __str__(self) -> str:
        return f"{self.asked_by} on {self.task_id}: {self.text[:40]}"

    def as_row(self) -> dict[str, Any]:
        return {
            "question_id": self.id,
            "task_id": self.task_id,
            "asked_by": self.asked_by,
            "question": self.text,
            "options": self.options,
            "asked_at": timestamp(self.asked_at),
            "answer": self.answer,
            "answered_by": self.answered_by or None,
            "answered_at": timestamp(self.answered_at),
            "message_id": self.answer_message_id,
        }


class AgentUsage(models.Model):
    """What an agent's runs used, per network, alias, model and day: summed as each run's usage is
    recorded (hub_tasks.usage), so the dashboard's totals and /metrics read a few rows per agent,
    never the attempts. model "" : the run named none."""

    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="+")
    alias = models.CharField(max_length=200)
    model = models.CharField(max_length=200, blank=True)
    day = models.DateField()
    runs = models.PositiveIntegerField(default=0)
    tokens_in = models.PositiveBigIntegerField(default=0)
    tokens_out = models.PositiveBigIntegerField(default=0)
    cost_usd = models.FloatField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["network", "alias", "model", "day"], name="agentusage_unique"),
        ]
        indexes = [models.Index(fields=["network", "day"], name="agentusage_network_day")]

    def __str__(self) -> str:
        return f"{self.network_id} {self.alias} {self.model or '-'} {self.day}: ${self.cost_usd:.4f}"


class CapScope(models.TextChoices):
    """What runs a concurrency cap counts: all of the network's, those of one runtime (the runtime
    the agent's node reports for it), or those needing one skill (a task's required_skills)."""

    ALL = "all"
    RUNTIME = "runtime"
    SKILL = "skill"


class Cap(models.Model):
    """At most `limit` tasks of its scope with their agents (delivered, acked or running) at once in
    its network; beyond it, a task waits `created` for a slot (Task.waiting_cap). hub_tasks.caps."""

    id = models.CharField(primary_key=True, max_length=36, default=new_id, editable=False)
    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="caps")
    scope = models.CharField(max_length=8, choices=CapScope.choices)
    # The runtime or the skill; empty for scope "all".
    value = models.CharField(max_length=200, blank=True, default="")
    limit = models.PositiveIntegerField()
    created_by = models.CharField(max_length=300)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["network", "scope", "value"], name="cap_unique_scope")]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        return self.scope if self.scope == CapScope.ALL else f"{self.scope} {self.value}"

    def as_row(self, used: int) -> dict[str, Any]:
        return {
            "cap_id": self.id,
            "network_id": self.network_id,
            "scope": self.scope,
            "value": self.value or None,
            "limit": self.limit,
            "used": used,
            "created_by": self.created_by,
            "created_at": timestamp(self.created_at),
            "updated_at": timestamp(self.updated_at),
        }


class CapSlot(models.Model):
    """One task holding a slot of a cap while it is with its agent; deleted when it leaves."""

    cap = models.ForeignKey(Cap, on_delete=models.CASCADE, related_name="slots")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="cap_slots")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cap", "task"], name="capslot_unique_task")]

    def __str__(self) -> str:
        return f"{self.task_id} in {self.cap_id}"


class BudgetPeriod(models.TextChoices):
    """The span a budget counts: the day or the month, by the hub's local date as AgentUsage's days."""

    DAY = "day"
    MONTH = "month"


class OnLimit(models.TextChoices):
    """What a spent budget does to new work for its scope: it waits, or its send is refused."""

    HOLD = "hold"
    REFUSE = "refuse"


class Budget(models.Model):
    """At most `limit_usd` and/or `limit_tokens` of runs' reported usage per day or month, for the
    network (alias "") or one agent. At 80 % a warning is sent once a period (warned_for); at 100 %
    (reached_for) new work for its scope waits (Task.waiting_budget) or is refused. hub_tasks.budgets."""

    id = models.CharField(primary_key=True, max_length=36, default=new_id, editable=False)
    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="budgets")
    # The agent whose runs it counts; "" for every run of the network.
    alias = models.CharField(max_length=200, blank=True, default="")
    period = models.CharField(max_length=8, choices=BudgetPeriod.choices)
    limit_usd = models.FloatField(null=True, blank=True)
    limit_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    on_limit = models.CharField(max_length=8, choices=OnLimit.choices, default=OnLimit.HOLD)
    # The first day of the period whose 80 % warning was sent, and of the one in which it reached
    # 100 % (null: none yet). Set under the budget's row lock: each once a period.
    warned_for = models.DateField(null=True, blank=True)
    reached_for = models.DateField(null=True, blank=True)
    created_by = models.CharField(max_length=300)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["network", "alias", "period"], name="budget_unique_scope"),
            models.CheckConstraint(
                condition=Q(limit_usd__isnull=False) | Q(limit_tokens__isnull=False), name="budget_has_a_limit"
            ),
        ]
        indexes = [
            # Admission reads only the budgets that are spent: mostly none.
            models.Index(fields=["network", "alias"], condition=Q(reached_for__isnull=False), name="budget_reached"),
        ]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        return f"{self.period} of {f'agent {self.alias}' if self.alias else 'the network'}"
