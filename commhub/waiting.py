"""Long-poll: a read that found nothing may wait for a doorbell instead of answering empty.

The read (a sync service or selector) calls `nothing_yet(groups=..., seconds=...)`. Outside
`long_poll` that returns at once and the read answers empty, so sync callers never block. Under
`long_poll` it raises WouldWait; `long_poll` then waits for a ring on the event loop, holding
neither a thread nor a database connection, and runs the read again until it finds something or
its deadline passes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from asgiref.sync import sync_to_async
from django.db import close_old_connections

from commhub.doorbell import Doorbell

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


async def long_poll(call: Callable[[], T]) -> T:
    """Run `call` (sync) in a pool thread, waiting between tries while it would wait."""
    may_wait, deadline = _may_wait.set(True), _deadline.set(None)
    bell: Doorbell | None = None
    try:
        while True:
            try:
                return await in_pool(call)
            except WouldWait as wait:
                _deadline.set(wait.deadline)
                if bell is None:
                    # Subscribe, then look again: a ring between the read and the subscription
                    # would otherwise be missed.
                    bell = await Doorbell(wait.groups).__aenter__()
                    continue
                await bell.wait(wait.deadline - time.monotonic())
    finally:
        if bell is not None:
            await bell.__aexit__(None, None, None)
        _deadline.reset(deadline)
        _may_wait.reset(may_wait)


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
