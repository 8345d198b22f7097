"""The one way a state change leaves the process: `publish()` a HubEvent.

Services call `publish()` inside their transaction. The event is written to the event log in that
transaction (through the port below: hub_events plugs its recorder and sealer in at start-up, so this
core module imports no app), and only after commit are the log rows sealed in commit order,
the doorbells of their audiences rung (SSE streams, dashboard websockets, long-polls, on any
process). A rolled-back write pushes nothing.

What is delivered is read from the log, so a delivery only needs to know which networks to seal and
which feeds to ring. A transaction collects both in one outbox however many events it publishes (a
broadcast to 500), registered once with `transaction.on_commit`. Only public Django API is used: a
registration that a rollback (of the transaction or of the savepoint it was made in) drops is noticed
through a weak reference, and the next publish starts a new outbox.

"""

from __future__ import annotations

import json
import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol
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


# Each event type's payload keys, exactly: a consumer can rely on every one being present.
_INBOX_KEYS = ("message_id", "type", "priority", "content", "from_session", "task_id")
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

    def to_json(self) -> str:
        return json.dumps(
            {
                "type": str(self.type),
                "network_id": self.network_id,
                "audience": list(self.audience),
                "payload": self.payload,
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, raw: str) -> HubEvent:
        data = json.loads(raw)
        return cls(
            type=EventType(data["type"]),
            network_id=data["network_id"],
            audience=tuple(data["audience"]),
            payload=data["payload"],
        )


class Recorder(Protocol):
    def __call__(self, *, network_id: str, type: str, payload: dict[str, Any], aliases: tuple[str, ...]) -> list[str]:
        """Write the event's rows in the caller's transaction; return the audiences written."""
        ...


class Sealer(Protocol):
    def __call__(self, *, network_id: str) -> object:
        """Give the network's committed, unsealed events their feed positions, in commit order.

        Cheap when there are none: an outbox may name a network whose events were rolled back.
        """
        ...


@dataclass
class _EventLog:
    record: Recorder | None = None
    seal: Sealer | None = None


_log = _EventLog()


def event_log_install(*, record: Recorder, seal: Sealer) -> None:
    """The event log's port: the app that keeps the log (hub_events) plugs in here in AppConfig.ready()."""
    _log.record, _log.seal = record, seal


def _installed() -> _EventLog:
    if _log.record is None or _log.seal is None:
        raise RuntimeError("No event log installed: add hub_events to INSTALLED_APPS (it plugs in at start-up).")
    return _log


class _Outbox:
    """What a transaction published: the networks to seal and the feeds to ring after commit."""

    def __init__(self) -> None:
        self.networks: dict[str, None] = {}
        self.groups: dict[str, None] = {}
        self.delivered = False
        self.registration: Callable[[], object] = lambda: None  # a weak reference, once registered

    def add(self, network_id: str, audiences: list[str]) -> None:
        self.networks[network_id] = None
        for audience in audiences:
            self.groups[feed_group(network_id, audience)] = None

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
            for network_id in self.networks:
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
    audiences = _installed().record(
        network_id=event.network_id, type=event.type, payload=event.payload, aliases=event.audience
    )
    connection = transaction.get_connection()
    outbox = _outboxes.get(connection)
    if outbox is not None and outbox.collecting:
        outbox.add(event.network_id, audiences)
        return
    # No outbox yet, or the last one was delivered, or its registration was rolled back (so were
    # the events it held): a fresh outbox, registered once.
    outbox = _outboxes[connection] = _Outbox()
    outbox.add(event.network_id, audiences)
    outbox.register()


def outbox_close() -> None:
    """Let the next publish on this connection start a new outbox, as after a commit.

    For a caller that treats part of a longer transaction as a transaction of its own: the test
    suite's `django_capture_on_commit_callbacks` blocks, which stand for commits the test's
    enclosing transaction never makes.
    """
    _outboxes.pop(transaction.get_connection(), None)
