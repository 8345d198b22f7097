"""Long-poll: a read that found nothing may wait for a doorbell instead of answering empty.

The read (a sync service or selector) calls `nothing_yet(groups=..., seconds=...)`. Outside
`long_poll` that returns at once and the read answers empty, so sync callers never block. Under
`long_poll` it raises WouldWait; `long_poll` then waits for a ring on the event loop, holding
neither a thread nor a database connection, and runs the read again until it finds something or
its deadline passes. `Poll` is the same wait in steps, for a transport that reports progress
while it waits (/mcp's SSE answer).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Generic, TypeVar

from asgiref.sync import sync_to_async
from django.db import close_old_connections

from hub_core.doorbell import Doorbell

T = TypeVar("T")

_may_wait: ContextVar[bool] = ContextVar("commhub_may_wait", default=False)
_deadline: ContextVar[float | None] = ContextVar("commhub_wait_deadline", default=None)


class WouldWait(Exception):
    def __init__(self, groups: list[str], deadline: float) -> None:
        super().__init__(f"waiting on {len(groups)} feeds")
        self.groups = groups
        self.deadline = deadline


def nothing_yet(*, groups: Iterable[str], seconds: float) -> None:
    """Called by a read that found nothing: wait (under long_poll) or let it answer empty."""
    if seconds <= 0 or not _may_wait.get():
        return
    deadline = _deadline.get() or time.monotonic() + seconds
    if time.monotonic() < deadline:
        raise WouldWait(list(groups), deadline)


@contextmanager
def no_waiting() -> Iterator[None]:
    """Reads inside answer at once: e.g. a JSON-RPC batch, which must not be run twice."""
    token = _may_wait.set(False)
    try:
        yield
    finally:
        _may_wait.reset(token)


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
        self.deadline: float | None = None  # the read's, from its first WouldWait
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
        may_wait, deadline = _may_wait.set(True), _deadline.set(self.deadline)
        try:
            return await in_pool(self.call)
        except WouldWait as wait:
            self.deadline, self._groups = wait.deadline, wait.groups
            return Pending(self.started, wait.deadline)
        finally:
            _deadline.reset(deadline)
            _may_wait.reset(may_wait)


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
    """Run sync database code on the shared thread pool, not on a thread kept for one request."""
    return await sync_to_async(_with_fresh_connection(call), thread_sensitive=False)()


def _with_fresh_connection(call: Callable[[], T]) -> Callable[[], T]:
    def run() -> T:
        close_old_connections()  # pool threads see no request signals: drop stale connections here
        try:
            return call()
        finally:
            close_old_connections()

    return run
