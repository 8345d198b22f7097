"""Long-poll: a read that found nothing may wait for a doorbell instead of answering empty.

A read that found nothing and may wait (get_inbox with wait_seconds) says so with
`nothing_yet(groups=..., seconds=...)` and answers its empty result as usual: it never raises and
never blocks, so sync callers just get the empty answer. The transport decides whether to wait:
under `long_poll`/`Poll` the empty answer is set aside, the wait happens on the event loop on a
doorbell of those groups, holding neither a thread nor a database connection, and the read runs
again until it finds something or its deadline passes. `Poll` is the same wait in steps, for a
transport that reports progress while it waits (/mcp's SSE answer).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Generic, TypeVar

from asgiref.sync import sync_to_async
from django.db import close_old_connections

from hub_core.doorbell import Doorbell, rings_on

T = TypeVar("T")


class _WaitNote:
    """What a read under a poll said about waiting: on which feeds, until when (monotonic)."""

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline
        self.groups: list[str] | None = None  # set when the read found nothing and may wait


# The note of the poll running the current read; None outside a poll (and in a batch).
_note: ContextVar[_WaitNote | None] = ContextVar("commhub_wait_note", default=None)


def nothing_yet(*, groups: Iterable[str], seconds: float) -> None:
    """Said by a read that found nothing: the poll running it, if any, may wait on these feeds for
    up to `seconds` (counted from the poll's first read) before it takes the empty answer."""
    note = _note.get()
    if seconds <= 0 or note is None:
        return
    if note.deadline is None:
        note.deadline = time.monotonic() + seconds
    if time.monotonic() < note.deadline:
        note.groups = list(groups)


@contextmanager
def no_waiting() -> Iterator[None]:
    """Reads inside answer at once: e.g. a JSON-RPC batch, which must not be run twice."""
    token = _note.set(None)
    try:
        yield
    finally:
        _note.reset(token)


class Pending:
    """What `Poll` answers while the read still waits: how long it has waited, of how long."""

    def __init__(self, started: float, deadline: float) -> None:
        self.waited = time.monotonic() - started  # seconds since the poll began
        self.total = deadline - started  # seconds the read will wait in all


class Poll(Generic[T]):
    """One long-poll, in steps a transport can report on.

    `first()` runs the read once; `wait(seconds)` waits on the doorbell and reads again until the
    read answers or `seconds` pass. Each step answers the read's result, or `Pending`. Between
    reads it holds neither a thread nor a database connection. The doorbell is joined by the first
    `wait()`, so a poll abandoned after `first()` holds nothing; `close()` leaves it.
    """

    def __init__(self, call: Callable[[], T]) -> None:
        self.call = call
        self.started = time.monotonic()
        self.deadline: float | None = None  # the read's, from the first time it said nothing_yet
        self.bell: Doorbell | None = None
        self._groups: list[str] = []

    async def first(self) -> T | Pending:
        return await self._read()

    async def wait(self, seconds: float = math.inf) -> T | Pending:
        assert self.deadline is not None, "wait() follows a first() that answered Pending"
        until = time.monotonic() + seconds
        if self.bell is None:
            # Subscribe, then look again: a ring between the last read and the subscription
            # would otherwise be missed.
            self.bell = await Doorbell(self._groups).__aenter__()
            outcome = await self._read()
            if not isinstance(outcome, Pending):
                return outcome
        while True:
            rang = await self.bell.wait(min(until, self.deadline) - time.monotonic())
            if rang or time.monotonic() >= self.deadline:
                outcome = await self._read()  # past its deadline the read answers, empty
                if not isinstance(outcome, Pending):
                    return outcome
            if time.monotonic() >= until:
                return Pending(self.started, self.deadline)

    async def close(self) -> None:
        if self.bell is not None:
            bell, self.bell = self.bell, None
            await bell.__aexit__(None, None, None)

    async def _read(self) -> T | Pending:
        note = _WaitNote(self.deadline)
        token = _note.set(note)  # the pool thread runs the read in a copy of this context
        try:
            outcome = await in_pool(self.call)
        finally:
            _note.reset(token)
        if note.groups is None or note.deadline is None:
            return outcome
        # The read found nothing and may still wait: its empty answer is set aside for now.
        self.deadline, self._groups = note.deadline, note.groups
        return Pending(self.started, note.deadline)


async def long_poll(call: Callable[[], T]) -> T:
    """Run `call` (sync) in a pool thread, waiting between tries while it would wait."""
    poll = Poll(call)
    try:
        outcome = await poll.first()
        while isinstance(outcome, Pending):
            outcome = await poll.wait()
        return outcome
    finally:
        await poll.close()


async def in_pool(call: Callable[[], T]) -> T:
    """Run sync database code on the shared thread pool, not on a thread kept for one request.

    Its doorbell rings go to this loop without waiting (hub_core.doorbell.ring)."""
    with rings_on(asyncio.get_running_loop()):
        return await sync_to_async(_with_fresh_connection(call), thread_sensitive=False)()


def _with_fresh_connection(call: Callable[[], T]) -> Callable[[], T]:
    def run() -> T:
        close_old_connections()  # pool threads see no request signals: drop stale connections here
        try:
            return call()
        finally:
            close_old_connections()

    return run
