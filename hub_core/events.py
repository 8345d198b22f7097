"""The one way a state change leaves the process: `publish()` a HubEvent.

Services call `publish()` inside their transaction. The event is written to the event log in that
transaction (through the port below: hub_events plugs its recorder and sealer in at start-up, so this
core module imports no app), and only after commit are the log rows sealed in commit order,
the doorbells of their audiences rung (SSE streams, dashboard websockets, long-polls, on any
process), and the in-process `hub_event` signal sent. A rolled-back write pushes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from django.db import transaction
from django.dispatch import Signal

from hub_core.doorbell import feed_group, ring


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


hub_event = Signal()


class Recorder(Protocol):
    def __call__(self, *, network_id: str, type: str, payload: dict[str, Any], aliases: tuple[str, ...]) -> list[str]:
        """Write the event's rows in the caller's transaction; return the audiences written."""
        ...


class Sealer(Protocol):
    def __call__(self, *, network_id: str) -> object:
        """Give the network's committed events their feed positions, in commit order."""
        ...


@dataclass
class _EventLog:
    record: Recorder | None = None
    seal_all: Sealer | None = None


_log = _EventLog()


def event_log_install(*, record: Recorder, seal_all: Sealer) -> None:
    """The event log's port: the app that keeps the log (hub_events) plugs in here in AppConfig.ready()."""
    _log.record, _log.seal_all = record, seal_all


def _installed() -> _EventLog:
    if _log.record is None or _log.seal_all is None:
        raise RuntimeError("No event log installed: add hub_events to INSTALLED_APPS (it plugs in at start-up).")
    return _log


def publish(event: HubEvent) -> None:
    """Record the event in the log now, in the caller's transaction; deliver it after commit.

    A rolled-back transaction takes its event rows with it and delivers nothing.
    """
    audiences = _installed().record(
        network_id=event.network_id, type=event.type, payload=event.payload, aliases=event.audience
    )
    connection = transaction.get_connection()
    outbox = None
    if connection.in_atomic_block:
        # One delivery per transaction, however many events it publishes (a broadcast to 500):
        # reuse the outbox registered in this atomic block (Django drops it with its savepoint).
        here = set(connection.savepoint_ids)
        outbox = next(
            (call for sids, call, _ in connection.run_on_commit if isinstance(call, _Outbox) and sids >= here), None
        )
    if outbox is None:
        outbox = _Outbox()
        outbox.add(event, audiences)
        transaction.on_commit(outbox, robust=True)
    else:
        outbox.add(event, audiences)


class _Outbox:
    """What a transaction published, delivered once it has committed."""

    def __init__(self) -> None:
        self.events: list[HubEvent] = []
        self.groups: dict[str, None] = {}
        self.networks: dict[str, None] = {}

    def add(self, event: HubEvent, audiences: list[str]) -> None:
        self.events.append(event)
        self.networks[event.network_id] = None
        for audience in audiences:
            self.groups[feed_group(event.network_id, audience)] = None

    def __call__(self) -> None:
        seal_all = _installed().seal_all
        try:
            for network_id in self.networks:
                seal_all(network_id=network_id)
        finally:
            # Even if sealing failed, ring: readers seal leftovers themselves.
            ring(self.groups)
            for event in self.events:
                hub_event.send_robust(sender=HubEvent, event=event)
