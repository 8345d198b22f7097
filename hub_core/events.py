"""The one way a state change leaves the process: `publish()` a HubEvent.

Services call `publish()` inside their transaction. The event is written to the event log in that
transaction (through the port below: hub_events plugs its recorder and sealers in at start-up, so
this core module imports no app). A write opened with `sealed_atomic` seals its rows (gives them
their feed positions, in commit order) as the last statements before its COMMIT, so a write commits
once; rows published outside such a block (the admin, a management command) are sealed after
commit instead. After commit the doorbells of their audiences ring (SSE streams, dashboard
websockets, long-polls, on any process). A rolled-back write pushes nothing.

What is delivered is read from the log, so a delivery only needs to know which rows are still to
seal and which feeds to ring. A transaction collects both in one outbox however many events it
publishes (a broadcast to 500), registered once with `transaction.on_commit`. Only public Django API
is used: a registration that a rollback (of the transaction or of the savepoint it was made in)
drops is noticed through a weak reference, and the next publish starts a new outbox.

"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple, ParamSpec, Protocol, TypeVar, overload
from weakref import WeakKeyDictionary

from django.db import transaction

from hub_core.doorbell import feed_group, ring

logger = logging.getLogger(__name__)


class EventType(StrEnum):
    NEW_TASK = "new_task"
    NEW_MESSAGE = "new_message"
    NEW_REPLY = "new_reply"
    BROADCAST = "broadcast"
    CHAINED_REPLY = "chained_reply"
    TASK_UPDATED = "task_updated"
    SESSION_UPDATED = "session_updated"
    TASK_EXPIRED = "task_expired"
    LEASE_LOST = "lease_lost"
    NEW_OPEN_TASK = "new_open_task"
    QUESTION_ASKED = "question_asked"
    QUESTION_ANSWERED = "question_answered"
    APPROVAL_REQUESTED = "approval_requested"
    APPROVAL_UPDATED = "approval_updated"
    CHANNEL_POST = "channel_post"
    WEBHOOK_DISABLED = "webhook_disabled"
    NODE_UPDATED = "node_updated"


# Each event type's payload keys, exactly: a consumer can rely on every one being present.
# context and the task's budgets too: a supervisor (commhub-agent node) starts the run from the push
# alone, without a get_inbox round trip (budgets are null for what is not a task).
_INBOX_KEYS = (
    "message_id",
    "type",
    "priority",
    "content",
    "context",
    "from_session",
    "task_id",
    "budget_usd",
    "budget_tokens",
)
EVENT_SCHEMA: dict[EventType, frozenset[str]] = {
    EventType.NEW_TASK: frozenset(_INBOX_KEYS),
    EventType.NEW_MESSAGE: frozenset(_INBOX_KEYS),
    EventType.NEW_REPLY: frozenset(_INBOX_KEYS),
    EventType.BROADCAST: frozenset(_INBOX_KEYS),
    EventType.CHAINED_REPLY: frozenset(
        {"parent_task_id", "child_task_id", "from_alias", "status", "result", "message_id"}
    ),
    EventType.TASK_UPDATED: frozenset({"task_id", "from_status", "to_status", "to_name", "from_name", "actor"}),
    EventType.SESSION_UPDATED: frozenset({"alias", "resume_id", "status", "task", "progress"}),
    EventType.TASK_EXPIRED: frozenset({"task_id", "to_name", "from_name", "message_id"}),
    # outcome: "requeued" (delivered to its agent again), "reopened" (claimed from the open pool:
    # back in it), "retry_scheduled" (held until retry_at) or "failed"; message_id: the notice in the
    # sender's inbox.
    # To every agent whose skills cover the task's required_skills: claim it with claim_task.
    EventType.NEW_OPEN_TASK: frozenset(
        {"task_id", "priority", "content", "context", "from_session", "required_skills"}
    ),
    # To the task's sender (and the operators): a person is asked; then, that it was answered (the
    # answer itself reaches the agent as a new_reply).
    EventType.QUESTION_ASKED: frozenset({"question_id", "task_id", "asked_by", "question", "options"}),
    EventType.QUESTION_ANSWERED: frozenset({"question_id", "task_id", "asked_by", "answered_by"}),
    # To the operators (and the caller's alias): a call is held for approval; then how it ended
    # (status: pending after a yes that did not complete the tier, else approved, failed, rejected or
    # expired; approvals: the yes votes so far).
    EventType.APPROVAL_REQUESTED: frozenset({"approval_id", "tool", "summary", "requested_by", "approvals_required"}),
    EventType.APPROVAL_UPDATED: frozenset({"approval_id", "tool", "status", "approvals", "decided_by", "reason"}),
    EventType.LEASE_LOST: frozenset(
        {"task_id", "to_name", "from_name", "lease_seconds", "outcome", "retry_at", "message_id"}
    ),
    # To a channel's members but the sender (of a pub/sub channel: its subscribers), a post at position
    # seq; content cut short when long (truncated: read it whole with channel_read after seq - 1).
    EventType.CHANNEL_POST: frozenset(
        {"channel_id", "name", "channel_type", "seq", "sender", "kind", "content", "truncated"}
    ),
    # To the operators: an outbound webhook subscription failed for too long and was switched off
    # (hub_webhooks); failing_since: when its unbroken failures began; reason: the last failure.
    EventType.WEBHOOK_DISABLED: frozenset({"subscription_id", "url", "reason", "failing_since"}),
    # To the operators: a node (`commhub-agent node`) reported itself (report_node); linked: the
    # aliases whose sessions it moved onto this node (their fleet cards change).
    EventType.NODE_UPDATED: frozenset({"node_id", "node_name", "slots_total", "slots_used", "linked"}),
}


@dataclass(frozen=True)
class HubEvent:
    type: EventType
    network_id: str
    # The aliases the event is addressed to; empty for network-wide news. Operators see every event.
    audience: tuple[str, ...]
    payload: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        expected = EVENT_SCHEMA[EventType(self.type)]
        if set(self.payload) != expected:
            raise ValueError(
                f"{self.type} payload keys {sorted(self.payload)} differ from the schema {sorted(expected)}"
            )


class Recorded(NamedTuple):
    audiences: list[str]  # whose feeds to ring
    ids: list[int]  # the rows written, to seal before commit


class Recorder(Protocol):
    def __call__(self, *, network_id: str, type: str, payload: dict[str, Any], aliases: tuple[str, ...]) -> Recorded:
        """Write the event's rows in the caller's transaction."""
        ...


class Sealer(Protocol):
    def __call__(self, *, network_id: str) -> object:
        """Give the network's committed, unsealed events their feed positions, in commit order.

        Cheap when there are none: an outbox may name a network whose events were rolled back.
        """
        ...


class InlineSealer(Protocol):
    def __call__(self, *, network_id: str, event_ids: list[int]) -> object:
        """Give these rows of the running transaction their feed positions now, from the network's
        counter, whose row lock it holds to commit. Ids of rows a savepoint rolled back are skipped."""
        ...


@dataclass
class _EventLog:
    record: Recorder | None = None
    seal: Sealer | None = None
    seal_now: InlineSealer | None = None


_log = _EventLog()


def event_log_install(*, record: Recorder, seal: Sealer, seal_now: InlineSealer) -> None:
    """The event log's port: the app that keeps the log (hub_events) plugs in here in AppConfig.ready()."""
    _log.record, _log.seal, _log.seal_now = record, seal, seal_now


def _installed() -> _EventLog:
    if _log.record is None or _log.seal is None or _log.seal_now is None:
        raise RuntimeError("No event log installed: add hub_events to INSTALLED_APPS (it plugs in at start-up).")
    return _log


class _Outbox:
    """What a transaction published: the rows still to seal (by network) and the feeds to ring."""

    def __init__(self) -> None:
        self.unsealed: dict[str, list[int]] = {}
        self.groups: dict[str, None] = {}
        self.delivered = False
        self.registration: Callable[[], object] = lambda: None  # a weak reference, once registered

    def add(self, network_id: str, recorded: Recorded) -> None:
        self.unsealed.setdefault(network_id, []).extend(recorded.ids)
        for audience in recorded.audiences:
            self.groups[feed_group(network_id, audience)] = None

    def seal_now(self) -> None:
        """Seal the rows published so far, in the running transaction, network by network."""
        seal_now = _installed().seal_now
        # One lock order for every writer (counter rows by network id): two writers that publish in
        # the same networks queue on the first of them instead of deadlocking.
        for network_id in sorted(self.unsealed):
            seal_now(network_id=network_id, event_ids=self.unsealed[network_id])
        self.unsealed.clear()  # nothing left for after commit (a rollback takes the positions too)

    @property
    def collecting(self) -> bool:
        """Still to be delivered by a registration Django holds for the running transaction."""
        return not self.delivered and self.registration() is not None

    def register(self) -> None:
        """Its one on_commit callback. Django drops the callback when the transaction, or the
        savepoint it was registered in, rolls back; the weak reference dies with it (nothing else
        holds it), which is how a publish learns, without reading Django's bookkeeping, that this
        outbox will never be delivered and it must start a new one."""

        def deliver_after_commit() -> None:
            self.deliver()

        self.registration = weakref.ref(deliver_after_commit)
        # Outside a transaction this runs at once; inside, after commit.
        transaction.on_commit(deliver_after_commit, robust=True)

    def deliver(self) -> None:
        self.delivered = True
        seal = _installed().seal
        try:
            # Rows published outside a sealed_atomic block: sealed after commit, in a transaction of
            # their own (the leftovers sealer, which also seals what a dead process left).
            for network_id in self.unsealed:
                try:
                    seal(network_id=network_id)
                except Exception:  # a failed seal must not keep the other networks unsealed
                    logger.exception("could not seal the events of %s; its readers seal them", network_id)
        finally:
            # Even if sealing failed, ring: readers seal leftovers themselves.
            ring(self.groups)


# The outbox collecting on a connection (Django's connections are per thread).
_outboxes: WeakKeyDictionary[Any, _Outbox] = WeakKeyDictionary()


def publish(event: HubEvent) -> None:
    """Record the event in the log now, in the caller's transaction; deliver it after commit.

    A rolled-back transaction takes its event rows with it and delivers nothing. However many
    events a transaction publishes (a broadcast to 500), it is delivered once: one outbox, one
    on_commit callback.
    """
    recorded = _installed().record(
        network_id=event.network_id, type=event.type, payload=event.payload, aliases=event.audience
    )
    connection = transaction.get_connection()
    outbox = _outboxes.get(connection)
    if outbox is not None and outbox.collecting:
        outbox.add(event.network_id, recorded)
        return
    # No outbox yet, or the last one was delivered, or its registration was rolled back (so were
    # the events it held): a fresh outbox, registered once.
    outbox = _outboxes[connection] = _Outbox()
    outbox.add(event.network_id, recorded)
    outbox.register()


def outbox_close() -> None:
    """Let the next publish on this connection start a new outbox, as after a commit.

    For a caller that treats part of a longer transaction as a transaction of its own: the test
    suite's `django_capture_on_commit_callbacks` blocks, which stand for commits the test's
    enclosing transaction never makes.
    """
    _outboxes.pop(transaction.get_connection(), None)


# How many sealed_atomic blocks are open on a connection: only the outermost one seals.
_sealed_depth: WeakKeyDictionary[Any, int] = WeakKeyDictionary()


@contextmanager
def _sealed_block() -> Iterator[None]:
    connection = transaction.get_connection()
    with transaction.atomic():
        depth = _sealed_depth.get(connection, 0)
        _sealed_depth[connection] = depth + 1
        try:
            yield
        finally:
            _sealed_depth[connection] = depth
        outbox = _outboxes.get(connection)
        # An inner block leaves its rows to the outermost one, so a write seals once, last. A block
        # that must roll back (an error caught inside it) runs no more statements.
        if depth == 0 and outbox is not None and outbox.collecting and not transaction.get_rollback():
            # Last before COMMIT, so the counter rows' locks (which order the seals) are held only
            # for the commit itself. When this block is itself inside a plain transaction.atomic
            # (a test's, a caller's own), it still seals here, and that is still correct: the locks
            # are held to the real commit, so no other writer takes positions in these networks
            # before this transaction's rows become visible (readers never find a smaller seq after
            # a larger one), and a rollback of the enclosing block takes the positions back with the
            # rows (no gap). The price is the lock held longer; code that goes on to lock rows of
            # other writers there could deadlock, which PostgreSQL detects and refuses, never
            # misorders. Rows the enclosing block publishes later are sealed by a later sealed
            # block, or else after commit.
            outbox.seal_now()


P = ParamSpec("P")
R = TypeVar("R")


@overload
def sealed_atomic(func: Callable[P, R]) -> Callable[P, R]: ...
@overload
def sealed_atomic(func: None = None) -> AbstractContextManager[None]: ...
def sealed_atomic(func: Callable[P, R] | None = None) -> Callable[P, R] | AbstractContextManager[None]:
    """`transaction.atomic` for a write that publishes: its events are sealed before its commit.

    `@sealed_atomic` on a service, or `with sealed_atomic():`. Nested blocks seal once, at the end
    of the outermost one; events published outside any such block are sealed after commit.
    """
    if func is None:
        return _sealed_block()
    return _sealed_block()(func)
