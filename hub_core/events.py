"""The one way a state change leaves the process: `publish()` a HubEvent.

Services call `publish()` inside their transaction. The event is written to the event log in that
transaction (through the port below: hub_events plugs its recorder and sealers in at start-up, so
this core module imports no app). A write opened with `sealed_atomic` writes and seals its rows
(gives them their feed positions, in commit order) as the last statement before its COMMIT, so a
write commits once; rows published outside such a block (the admin, a management command) are
written at once and sealed after commit instead. After commit the doorbells of their audiences
ring (SSE streams, dashboard websockets, long-polls, on any process). A rolled-back write pushes
nothing.

What is delivered is read from the log, so a delivery only needs to know which rows are still to
seal and which feeds to ring. A transaction collects both in one outbox however many events it
publishes (a broadcast to 500), registered once with `transaction.on_commit`. Only public Django API
is used: a registration that a rollback (of the transaction or of the savepoint it was made in)
drops is noticed through a weak reference, and the next publish starts a new outbox; an event a
sealed block published in a savepoint that rolled back is left out of the seal the same way.

"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, fields
from datetime import datetime
from enum import StrEnum
from types import UnionType
from typing import (
    Any,
    ClassVar,
    NamedTuple,
    ParamSpec,
    Protocol,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
    overload,
)
from weakref import WeakKeyDictionary

from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import autodiscover_modules

from hub_core import tracing
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
    NODE_COMMAND = "node_command"
    NODE_COMMAND_UPDATED = "node_command_updated"
    BUDGET_UPDATED = "budget_updated"


# Each event type's payload is declared by the app that publishes it (its `events.py`: one frozen
# dataclass per type, subclassing EventPayload, as Zulip's zerver/lib/event_types.py declares one model
# per event), with the dashboard regions it touches. This module holds the base and the catalogue they
# register in, so the core imports no app: hub_core's AppConfig.ready() imports every app's `events`.


@dataclass(frozen=True)
class Touch:
    """A dashboard region an event touches, and how the page finds what in it to refresh.

    `keys`: payload fields (a string or a list of strings) naming the region's cards or rows to
    refresh, and `audience`: the event's addressees too; with neither, the whole region. `subject`:
    only when one of these fields names what the page shows (the region's data-subject: its task,
    its channel). `when`: only when one of these fields has one of its values.
    """

    region: str
    keys: tuple[str, ...] = ()
    audience: bool = False
    subject: tuple[str, ...] = ()
    when: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def as_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"region": self.region}
        if self.keys:
            shown["keys"] = list(self.keys)
        if self.audience:
            shown["audience"] = True
        if self.subject:
            shown["subject"] = list(self.subject)
        if self.when:
            shown["when"] = {name: list(values) for name, values in self.when}
        return shown


class EventPayload:
    """Base of each event type's payload: a frozen dataclass whose fields, in order, are the payload's
    keys as they go on the wire (the event log, SSE and websocket frames, webhooks).

    A subclass naming its `event_type` registers it; one without (a base several types share) does not.
    """

    event_type: ClassVar[EventType]
    # The dashboard regions it touches (hub_dashboard hands them to live.js, which routes on them).
    touches: ClassVar[tuple[Touch, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "event_type" not in cls.__dict__:
            return
        kind = EventType(cls.__dict__["event_type"])
        if kind in _payloads and _payloads[kind].__qualname__ != cls.__qualname__:
            raise TypeError(f"{kind} is declared twice: {_payloads[kind].__qualname__} and {cls.__qualname__}")
        _payloads[kind] = cls

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(item.name for item in fields(cast(Any, cls)))

    def as_payload(self) -> dict[str, Any]:
        """The payload as published: the fields in their declared order (shallow, values as they are)."""
        return {name: getattr(self, name) for name in self.keys()}

    @classmethod
    def check(cls, payload: Mapping[str, Any]) -> list[str]:
        """What in `payload` differs from the declaration: keys, then each value's type. Empty: it fits."""
        if set(payload) != set(cls.keys()):
            return [f"{cls.event_type} payload keys {sorted(payload)} differ from the schema {sorted(cls.keys())}"]
        hints = get_type_hints(cls)
        return [
            f"{cls.event_type}.{name} is {type(payload[name]).__name__} {payload[name]!r}, declared {hints[name]}"
            for name in cls.keys()
            if not _fits(payload[name], hints[name])
        ]


def _fits(value: Any, declared: Any) -> bool:
    """Whether a JSON-ready value fits a payload field's annotation (the few forms payloads use)."""
    if declared is Any:
        return True
    if declared is None or declared is type(None):
        return value is None
    origin = get_origin(declared)
    if origin in (Union, UnionType):
        return any(_fits(value, option) for option in get_args(declared))
    if origin is list:
        (item,) = get_args(declared)
        return isinstance(value, list) and all(_fits(each, item) for each in value)
    if origin is dict:
        return isinstance(value, dict)
    if declared is float:  # a whole number is a number too (progress 0)
        return isinstance(value, int | float) and not isinstance(value, bool)
    if declared is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, declared)


_payloads: dict[EventType, type[EventPayload]] = {}


def events_discover() -> None:
    """Import every installed app's `events` module, where it declares its payloads (once; cheap after)."""
    if len(_payloads) < len(EventType):
        autodiscover_modules("events")


def event_payloads() -> dict[EventType, type[EventPayload]]:
    """The catalogue: each event type's payload declaration, in EventType's order."""
    events_discover()
    missing = [str(kind) for kind in EventType if kind not in _payloads]
    if missing:
        raise LookupError(f"No app declares the payload of {', '.join(missing)} (in its events.py).")
    return {kind: _payloads[kind] for kind in EventType}


def event_routes() -> dict[str, list[dict[str, Any]]]:
    """Each event type's dashboard regions, as the page's script reads them."""
    return {str(kind): [touch.as_json() for touch in payload.touches] for kind, payload in event_payloads().items()}


class _Schema(Mapping[EventType, frozenset[str]]):
    """Each event type's payload keys, exactly (read from the declarations): a consumer can rely on
    every one being present."""

    def __getitem__(self, kind: EventType) -> frozenset[str]:
        return frozenset(event_payloads()[kind].keys())

    def __iter__(self) -> Iterator[EventType]:
        return iter(event_payloads())

    def __len__(self) -> int:
        return len(event_payloads())


EVENT_SCHEMA: Mapping[EventType, frozenset[str]] = _Schema()


@dataclass(frozen=True)
class HubEvent:
    type: EventType
    network_id: str
    # The aliases the event is addressed to; empty for network-wide news. Operators see every event.
    audience: tuple[str, ...]
    # The payload as it goes on the wire; an EventPayload instance is turned into it.
    payload: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        declared = event_payloads()[EventType(self.type)]
        if isinstance(self.payload, EventPayload):
            if not isinstance(self.payload, declared):
                raise ValueError(f"{self.type} carries a {type(self.payload).__name__}, not a {declared.__name__}")
            object.__setattr__(self, "payload", self.payload.as_payload())
        expected = frozenset(declared.keys())
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


class Unrecorded(NamedTuple):
    """An event a sealed block published, written by its seal (InlineSealer), not by `publish`."""

    type: str
    payload: dict[str, Any]
    aliases: tuple[str, ...]
    created_at: datetime
    trace: str  # the W3C traceparent of its publication ("" untraced)


class InlineSealer(Protocol):
    def __call__(self, *, network_id: str, event_ids: list[int], unrecorded: list[Unrecorded]) -> object:
        """Give these rows of the running transaction their feed positions now, from the network's
        counter, whose row lock it holds to commit, and write the `unrecorded` events' rows with the
        positions after theirs. Ids of rows a savepoint rolled back are skipped."""
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
        # Published in a sealed block, written by its seal: (network, event, its guard). The guard is
        # a weak reference to an on_commit callback registered under the same savepoints as the
        # event was published (the outbox's own registration, or one made for those savepoints),
        # which Django drops exactly when one of them rolls back, and the event with it.
        self.unrecorded: list[tuple[str, Unrecorded, Callable[[], object]]] = []
        self.guards: dict[tuple[str, ...], Callable[[], object]] = {}
        self.groups: dict[str, None] = {}
        self.delivered = False
        self.registration: Callable[[], object] = lambda: None  # a weak reference, once registered

    def add(self, network_id: str, recorded: Recorded) -> None:
        self.unsealed.setdefault(network_id, []).extend(recorded.ids)
        self._ring(network_id, recorded.audiences)

    def defer(self, event: HubEvent) -> None:
        """The event for the seal to write (one round trip fewer a publication)."""
        recipients = [alias for alias in event.audience if alias]
        with tracing.publishing(event.type, event.network_id, len(set(recipients))) as trace:
            unrecorded = Unrecorded(event.type, event.payload, event.audience, timezone.now(), trace)
        self.unrecorded.append((event.network_id, unrecorded, self._guard()))
        self._ring(event.network_id, ["", *recipients])  # as recorded

    def _guard(self) -> Callable[[], object]:
        savepoints = _savepoints()
        guard = self.guards.get(savepoints)
        if guard is None:

            def published_here() -> None:
                pass

            transaction.on_commit(published_here)
            guard = self.guards[savepoints] = weakref.ref(published_here)
        return guard

    def _ring(self, network_id: str, audiences: Iterable[str]) -> None:
        for audience in audiences:
            self.groups[feed_group(network_id, audience)] = None

    def seal_now(self) -> None:
        """Seal the rows published so far, in the running transaction, network by network, writing
        those the block published (but not those a rolled-back savepoint published)."""
        seal_now = _installed().seal_now
        unrecorded: dict[str, list[Unrecorded]] = {}
        for network_id, event, guard in self.unrecorded:
            if guard() is not None:
                unrecorded.setdefault(network_id, []).append(event)
        # One lock order for every writer (counter rows by network id): two writers that publish in
        # the same networks queue on the first of them instead of deadlocking.
        for network_id in sorted({*self.unsealed, *unrecorded}):
            seal_now(
                network_id=network_id,
                event_ids=self.unsealed.get(network_id, []),
                unrecorded=unrecorded.get(network_id, []),
            )
        self.unsealed.clear()  # nothing left for after commit (a rollback takes the positions too)
        self.unrecorded.clear()

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

        self.registration = self.guards[_savepoints()] = weakref.ref(deliver_after_commit)
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


def _savepoints() -> tuple[str, ...]:
    return tuple(transaction.get_connection().savepoint_ids)


# The outbox collecting on a connection (Django's connections are per thread).
_outboxes: WeakKeyDictionary[Any, _Outbox] = WeakKeyDictionary()


def publish(event: HubEvent) -> None:
    """Record the event in the log, in the caller's transaction; deliver it after commit.

    In a sealed_atomic block its rows are written by the block's seal, in the same statement that
    gives them their positions; elsewhere now. A rolled-back transaction (or savepoint) takes its
    event with it and delivers nothing. However many events a transaction publishes (a broadcast to
    500), it is delivered once: one outbox, one on_commit callback.
    """
    connection = transaction.get_connection()
    outbox = _outboxes.get(connection)
    fresh = outbox is None or not outbox.collecting
    if fresh:
        # No outbox yet, or the last one was delivered, or its registration was rolled back (so were
        # the events it held): a fresh outbox, registered once.
        outbox = _outboxes[connection] = _Outbox()
    if _sealed_depth.get(connection, 0):
        if fresh:
            outbox.register()  # first: its registration guards what is published beside it
        outbox.defer(event)
        return
    recorded = _installed().record(
        network_id=event.network_id, type=event.type, payload=event.payload, aliases=event.audience
    )
    outbox.add(event.network_id, recorded)
    if fresh:
        outbox.register()  # last: outside a transaction it delivers at once


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
