"""The channel layer as a doorbell: it says "look again", never what happened.

A ring carries no data, so a full channel (the layer drops messages past its capacity) or a
process that missed one costs a delay, never an event: readers page the event log by seq.
A layer that fails (Redis down) degrades a doorbell to polling: `wait` then returns every few
seconds so its reader looks again, and the next `renew` tries the layer again. Redis Pub/Sub
(channels_redis.pubsub) does not tell a subscriber its connection dropped (it reconnects and
re-subscribes by itself), so a ring sent meanwhile is lost silently: no wait lasts longer than
QUIET_SECONDS, which bounds what such a loss costs a reader.

A write rings after its commit, from the pool thread it ran on. Under `hub_core.waiting.in_pool`
the ring is handed to the worker's event loop and the thread moves on (fire and forget): the loop
already holds the layer's connections, and a lost ring loses nothing. Elsewhere (a management
command, Django's own sync views) `ring` sends it and waits, as a sync caller must.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from contextvars import ContextVar
from types import TracebackType

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)
RING = {"type": "feed.ring"}
POLL_SECONDS = 2.0  # how often a reader looks again while the layer is down
QUIET_SECONDS = 10.0  # the longest a reader waits without looking again, rung or not
CHANNEL_RETRY_SECONDS = 30.0  # a bell made while the layer was down asks it for a channel this often


def feed_group(network_id: str, audience: str) -> str:
    """The layer group of one audience's feed (group names must be short ASCII)."""
    who = hashlib.sha256(audience.encode()).hexdigest()[:24] if audience else "operators"
    return f"feed.{network_id}.{who}"


# The event loop whose pool thread runs the current sync code (set by hub_core.waiting.in_pool;
# the pool thread runs in a copy of the awaiting task's context, so it sees the value).
_worker_loop: ContextVar[asyncio.AbstractEventLoop | None] = ContextVar("commhub_worker_loop", default=None)
# Rings on their way: the loop keeps only weak references to tasks, so these keep them alive.
_ringing: set[Future[None]] = set()


@contextmanager
def rings_on(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """Sync code run for this loop (in a pool thread) hands its rings to the loop."""
    token = _worker_loop.set(loop)
    try:
        yield
    finally:
        _worker_loop.reset(token)


def ring(groups: Iterable[str]) -> None:
    """Ring from sync code, after commit; a broken layer delays pushes, it never fails a write."""
    unique = list(dict.fromkeys(groups))
    loop = _worker_loop.get()
    if loop is not None and loop.is_running():
        try:
            future = asyncio.run_coroutine_threadsafe(_ring(unique), loop)
        except RuntimeError:  # the loop closed in between: ring from here
            pass
        else:
            _ringing.add(future)
            future.add_done_callback(_rung)
            return
    try:
        async_to_sync(_ring)(unique)
    except Exception:
        logger.exception("could not ring the doorbell; readers catch up from the event log")


def _rung(future: Future[None]) -> None:
    _ringing.discard(future)
    if not future.cancelled() and future.exception() is not None:
        logger.error("could not ring the doorbell; readers catch up from the event log", exc_info=future.exception())


async def _ring(groups: list[str]) -> None:
    layer = get_channel_layer()
    for group in groups:
        await layer.group_send(group, RING)


class Doorbell:
    """`async with Doorbell(groups) as bell: await bell.wait(seconds)`.

    One receive runs for the bell's whole life and raises a flag on each ring; `wait` waits on the
    flag. A receive is never cancelled by a wait that times out: on the Redis layer a cancelled
    receive interrupts its blocking read and resets its connection, and a reader that waits in
    short steps (a long-poll reporting progress each second) would do that every step."""

    def __init__(self, groups: Iterable[str]) -> None:
        self.groups = list(groups)
        self.layer = get_channel_layer()
        self.channel = ""
        self.broken = False
        self._rang = asyncio.Event()
        self._listener: asyncio.Task[None] | None = None
        self._channel_retry_at = 0.0

    async def __aenter__(self) -> Doorbell:
        await self.renew()
        return self

    async def renew(self) -> None:
        """(Re)join the groups: layers forget members after their group expiry, or were down. A
        bell whose layer was down when it was made gets its channel, and its listener, here."""
        try:
            if not self.channel:
                if time.monotonic() < self._channel_retry_at:
                    return  # still polling: each failed attempt leaves a queue behind in the layer
                self._channel_retry_at = time.monotonic() + CHANNEL_RETRY_SECONDS
                self.channel = await self.layer.new_channel()  # Redis Pub/Sub subscribes here
                self._listener = asyncio.create_task(self._listen())
            for group in self.groups:
                await self.layer.group_add(group, self.channel)
        except Exception:
            self._broke("join")
        else:
            self.broken = False

    async def join(self, groups: Iterable[str]) -> None:
        """Listen on these groups too (kept on renew)."""
        added = [group for group in groups if group not in self.groups]
        self.groups += added
        for group in added if self.channel and not self.broken else ():
            try:
                await self.layer.group_add(group, self.channel)
            except Exception:
                self._broke("join")

    async def leave(self, groups: Iterable[str]) -> None:
        """Stop listening on these groups (best effort: the layer expires members anyway)."""
        gone = [group for group in groups if group in self.groups]
        self.groups = [group for group in self.groups if group not in gone]
        for group in gone if self.channel else ():
            try:
                await self.layer.group_discard(group, self.channel)
            except Exception:
                logger.debug("could not leave %s", group, exc_info=True)

    def nudge(self) -> None:
        """Wake the waiter as a ring would: it has a reason of its own to look again."""
        self._rang.set()

    async def _listen(self) -> None:
        while True:
            try:
                await self.layer.receive(self.channel)
            except Exception:
                self._broke("receive")
                self._rang.set()  # a ring may have been lost with the connection: look again now
                await asyncio.sleep(POLL_SECONDS)  # and try the layer again, without spinning
                continue
            self._rang.set()

    async def wait(self, seconds: float) -> bool:
        """True if it rang within `seconds`; while the layer is down, True after a poll interval."""
        if self.broken:
            await asyncio.sleep(max(min(seconds, POLL_SECONDS), 0))
            await self.renew()  # try the layer again: a passing fault costs one interval, no more
            self._rang.clear()
            return True
        try:
            await asyncio.wait_for(self._rang.wait(), timeout=max(min(seconds, QUIET_SECONDS), 0))
        except TimeoutError:
            return seconds > QUIET_SECONDS  # quiet this long: look again, a ring may have been lost
        self._rang.clear()  # no await since it was set: a later ring raises it again
        return True

    def _broke(self, what: str) -> None:
        if not self.broken:
            logger.warning("channel layer failed to %s; polling the event log until it is back", what, exc_info=True)
        self.broken = True

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
            self._listener = None
        for group in self.groups if self.channel else ():
            try:
                await self.layer.group_discard(group, self.channel)
            except Exception:  # leaving is best effort: the layer expires members anyway
                logger.debug("could not leave %s", group, exc_info=True)
