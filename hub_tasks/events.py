"""The events hub_tasks publishes: each one's payload, field by field, and the dashboard regions it
touches (hub_core.events.EventPayload). The fields' order is the payload's order on the wire."""

from __future__ import annotations

from dataclasses import dataclass

from hub_core.events import EventPayload, EventType, Touch

# Every event moves the cards of its addressees (their inbox counts) on the fleet page.
_FLEET = Touch("fleet", audience=True)
# A task's own page, when the event is about the task it shows.
_TASK_PAGE = Touch("task", subject=("task_id",))
_TASK_ROW = Touch("tasks", keys=("task_id",))
# Posted, claimed (created → acked), ended or back in the pool: the open tasks changed.
_POOL = Touch("pool")


@dataclass(frozen=True)
class InboxPayload(EventPayload):
    """A message put in an alias's inbox. context and the task's budgets too: a supervisor
    (commhub-agent node) starts the run from the push alone, without a get_inbox round trip (budgets
    are null for what is not a task)."""

    message_id: str
    type: str  # the message's type
    priority: str
    content: str
    context: str | None
    from_session: str
    task_id: str | None
    budget_usd: float | None
    budget_tokens: int | None


@dataclass(frozen=True)
class NewTask(InboxPayload):
    event_type = EventType.NEW_TASK
    touches = (_FLEET, _TASK_ROW, Touch("task"), Touch("completions"))


@dataclass(frozen=True)
class NewMessage(InboxPayload):
    event_type = EventType.NEW_MESSAGE
    touches = (_FLEET, _TASK_PAGE)


@dataclass(frozen=True)
class NewReply(InboxPayload):
    event_type = EventType.NEW_REPLY
    touches = (_FLEET, _TASK_PAGE)


@dataclass(frozen=True)
class Broadcast(InboxPayload):
    event_type = EventType.BROADCAST
    touches = (_FLEET, _TASK_PAGE)


@dataclass(frozen=True)
class ChainedReply(EventPayload):
    """To a parent task's sender: a child task ended; message_id: the reply in their inbox."""

    event_type = EventType.CHAINED_REPLY
    touches = (
        _FLEET,
        Touch("tasks", keys=("parent_task_id", "child_task_id")),
        Touch("task", subject=("parent_task_id", "child_task_id")),
        Touch("completions"),
    )

    parent_task_id: str
    child_task_id: str
    from_alias: str
    status: str
    result: str | None
    message_id: str


@dataclass(frozen=True)
class TaskUpdated(EventPayload):
    """A task moved from one status to another (every move, with its actor)."""

    event_type = EventType.TASK_UPDATED
    touches = (
        Touch("fleet", keys=("to_name",), audience=True),
        Touch("pool", when=(("from_status", ("created",)), ("to_status", ("created",)))),
        _TASK_ROW,
        _TASK_PAGE,
        Touch("completions", when=(("to_status", ("replied", "failed")),)),
        # A run ended: the usage it reported moved the budgets of its scope.
        Touch("budgets", when=(("to_status", ("replied", "failed")),)),
    )

    task_id: str
    from_status: str
    to_status: str
    to_name: str
    from_name: str
    actor: str


@dataclass(frozen=True)
class TaskExpired(EventPayload):
    """To its sender: a task missed its deadline; message_id: the notice in their inbox."""

    event_type = EventType.TASK_EXPIRED
    touches = (Touch("fleet", keys=("to_name",), audience=True), _POOL, _TASK_ROW, _TASK_PAGE, Touch("completions"))

    task_id: str
    to_name: str
    from_name: str
    message_id: str


@dataclass(frozen=True)
class LeaseLost(EventPayload):
    """A running task's lease lapsed. outcome: "requeued" (delivered to its agent again), "reopened"
    (claimed from the open pool: back in it), "retry_scheduled" (held until retry_at) or "failed";
    message_id: the notice in the sender's inbox."""

    event_type = EventType.LEASE_LOST
    touches = (Touch("fleet", keys=("to_name",), audience=True), _TASK_ROW, _TASK_PAGE, Touch("completions"))

    task_id: str
    to_name: str
    from_name: str
    lease_seconds: int | None
    outcome: str
    retry_at: str | None
    message_id: str


@dataclass(frozen=True)
class NewOpenTask(EventPayload):
    """To every agent whose skills cover the task's required_skills: claim it with claim_task."""

    event_type = EventType.NEW_OPEN_TASK
    touches = (_FLEET, _POOL, _TASK_PAGE)

    task_id: str
    priority: str
    content: str
    context: str | None
    from_session: str
    required_skills: list[str]


@dataclass(frozen=True)
class QuestionAsked(EventPayload):
    """To the task's sender (and the operators): a person is asked."""

    event_type = EventType.QUESTION_ASKED
    touches = (
        Touch("fleet", keys=("asked_by",), audience=True),
        Touch("questions"),
        Touch("questions_count"),
        _TASK_PAGE,
    )

    question_id: str
    task_id: str
    asked_by: str
    question: str
    options: list[str] | None


@dataclass(frozen=True)
class QuestionAnswered(EventPayload):
    """That it was answered (the answer itself reaches the agent as a new_reply)."""

    event_type = EventType.QUESTION_ANSWERED
    touches = QuestionAsked.touches

    question_id: str
    task_id: str
    asked_by: str
    answered_by: str


@dataclass(frozen=True)
class BudgetUpdated(EventPayload):
    """A budget (hub_tasks.budgets) changed state: "warned" (80 % spent, once a period), "reached"
    (100 %: new work for its scope waits or is refused) or "released" (raised or its period turned:
    what waited is delivered); or its owners changed it: "set" (created, new limits) or "deleted".
    alias: its agent (null: the whole network); spent and limits of its period now; message_id: the
    notice sent with it (null: none)."""

    event_type = EventType.BUDGET_UPDATED
    # The card of the agent it counts, and of whoever its notice went to; the strips and the Limits page.
    touches = (Touch("fleet", keys=("alias",), audience=True), Touch("nodes"), Touch("budgets"))

    budget_id: str
    alias: str | None
    period: str
    state: str
    spent_usd: float
    spent_tokens: int
    limit_usd: float | None
    limit_tokens: int | None
    percent: float
    message_id: str | None
