"""Fan-out: one reader per process and network, shared by that process's streams of its feeds.

Every agent stream (hub_live.sse) and dashboard socket (hub_live.consumers) joins the reader of its
network with its audience (an alias, or the operators) and its own position. The reader listens on
one doorbell (hub_core.doorbell) for the feeds of all its streams, and on each ring reads the log
once, for all of them: the new events of every audience it serves after the position it has read
to (its head), in one query, handed to each stream whose audience they are for and that has not
had them. A stream that joins behind the head (a Last-Event-ID replay) or fell behind (a slow
client, whose frames are not piled up without end) is caught up from the log in the same round,
from its own position, before it gets anything newer: no frame skipped, none twice. The receipts
of what the round hands to agents' own streams are written in one transaction before any frame
leaves, as one stream's were before. A reader whose last stream leaves stops and leaves the layer.

Reads run on a few threads of their own, so a delivery never queues behind the tool calls waiting
for the shared pool (hub_core.waiting.in_pool). Now and then (every COMMHUB_STREAM_RECHECK_SECONDS)
the reader renews its doorbell and seals events a process committed but died before sealing.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from django.db import close_old_connections

from hub_core.doorbell import Doorbell, feed_group
from hub_events.selectors import PAGE, feeds_after_traced
from hub_events.services import events_seal_leftovers
from hub_tasks.models import DeliveredVia
from hub_tasks.receipts import deliveries_mark

logger = logging.getLogger(__name__)
T = TypeVar("T")
Frame = tuple[dict[str, Any], str]  # a frame, and the trace context it was published in
READ_THREADS = 4
_executor: ThreadPoolExecutor | None = None
_readers: dict[tuple[int, str], _Reader] = {}  # by (event loop, network)


class Stream:
    """One stream's place in its network's reader: what it has been handed, and where it is."""

    def __init__(self, reader: _Reader, audience: str, after: int, receipts: DeliveredVia | None) -> None:
        self.reader = reader
        self.audience = audience
        self.after = after  # handed everything of its audience up to here
        self.receipts = receipts  # an agent's own stream marks what it is handed delivered, so
        self.pending: list[Frame] = []
        self.ready = asyncio.Event()
        self.paused = False  # handed a page it has not taken yet: caught up from the log later

    async def next(self, seconds: float) -> list[Frame]:
        """The frames handed to the stream since the last call, oldest first; [] if none came
        within `seconds`."""
        if not self.pending:
            try:
                await asyncio.wait_for(self.ready.wait(), timeout=max(seconds, 0))
            except TimeoutError:
                return []
        frames, self.pending = self.pending, []
        self.ready.clear()
        if self.paused:
            self.paused = False
            self.reader.bell.nudge()  # it is behind now: catch it up
        return frames


async def join(*, network_id: str, audience: str, after: int, receipts: DeliveredVia | None = None) -> Stream:
    """A stream of the audience's feed from `after` on, served by the process's reader of the network.
    Subscribed before it returns: nothing committed from now on is missed. Leave it with `leave`."""
    loop = asyncio.get_running_loop()
    key = (id(loop), network_id)
    reader = _readers.get(key)
    if reader is None or reader.loop is not loop or (reader.task is not None and reader.task.done()):
        reader = _readers[key] = _Reader(key, network_id, head=after)  # (a loop's id outlives the loop)
    stream = Stream(reader, audience, after, receipts)
    await reader.add(stream)
    return stream


def leave(stream: Stream) -> None:
    """The stream is gone; a reader left without streams stops and leaves the layer."""
    stream.reader.remove(stream)


def readers() -> list[str]:
    """The networks this process (this event loop) has a running reader for."""
    loop = id(asyncio.get_running_loop())
    return sorted(network_id for (at, network_id) in _readers if at == loop)


@dataclass
class _Round:
    """What one read hands out: each stream's frames and new position, and whether to read again at once."""

    handed: list[tuple[Stream, list[Frame], int]]
    head: int
    again: bool


class _Reader:
    def __init__(self, key: tuple[int, str], network_id: str, *, head: int) -> None:
        self.key = key
        self.loop = asyncio.get_running_loop()
        self.network_id = network_id
        self.head = head  # every stream at or past it has been handed all of its audience up to here
        self.streams: set[Stream] = set()
        self.joining = 0  # streams on their way in
        self.audiences: dict[str, int] = {}  # streams per audience
        self.bell = Doorbell([])
        self.entered = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def add(self, stream: Stream) -> None:
        self.joining += 1
        try:
            if self.task is None:
                self.task = asyncio.create_task(self._run())
            await self.entered.wait()
            count = self.audiences.get(stream.audience, 0)
            self.audiences[stream.audience] = count + 1
            if not count:
                await self.bell.join([feed_group(self.network_id, stream.audience)])
        finally:
            self.joining -= 1
        if not self.streams and stream.after > self.head:
            self.head = stream.after  # nobody needs what lies before it
        self.streams.add(stream)
        self.bell.nudge()  # a replay starts now, not on the next ring

    def remove(self, stream: Stream) -> None:
        if stream not in self.streams:
            return
        self.streams.discard(stream)
        self.audiences[stream.audience] -= 1
        if self._idle() and _readers.get(self.key) is self:
            del _readers[self.key]  # a stream joining from now on gets a new reader
        self.bell.nudge()  # the loop leaves the feed, or stops

    def _idle(self) -> bool:
        return not self.streams and not self.joining

    async def _run(self) -> None:
        every = float(settings.COMMHUB_STREAM_RECHECK_SECONDS)
        next_check = time.monotonic() + every
        again = False
        try:
            await self.bell.__aenter__()
            self.entered.set()
            while True:
                if not again:
                    await self.bell.wait(next_check - time.monotonic())
                await self._leave_quiet_feeds()
                if self._idle():
                    return
                try:
                    if time.monotonic() >= next_check:
                        next_check = time.monotonic() + every
                        await self.bell.renew()  # layers forget members after their group expiry
                        await _off_loop(lambda: events_seal_leftovers(network_id=self.network_id))
                    again = self._hand(await _off_loop(self._read()))
                except Exception:  # a passing database fault: the next ring or check reads again
                    logger.exception("feed read failed; reading again on the next ring")
                    again = False
        finally:
            if _readers.get(self.key) is self:
                del _readers[self.key]
            await self.bell.__aexit__(None, None, None)

    async def _leave_quiet_feeds(self) -> None:
        quiet = [audience for audience, count in self.audiences.items() if not count]
        for audience in quiet:
            del self.audiences[audience]
        if quiet:
            await self.bell.leave(feed_group(self.network_id, audience) for audience in quiet)

    def _read(self) -> Callable[[], _Round]:
        """The round's read, as a call for a reading thread, on a snapshot of the positions."""
        network_id, head = self.network_id, self.head
        places = [(stream, stream.audience, stream.after) for stream in self.streams if not stream.paused]

        def read() -> _Round:
            audiences = {audience for _, audience, _ in places}
            new = (
                feeds_after_traced(network_id=network_id, audiences=audiences, after=head, limit=PAGE)
                if audiences
                else []
            )
            top = new[-1][1]["id"] if new else head
            replays: dict[tuple[str, int], list[tuple[str, dict[str, Any], str]]] = {}
            handed = []
            for stream, audience, after in places:
                frames: list[Frame] = []
                if after < head:  # behind: from the log, from its own position, up to the head
                    if (audience, after) not in replays:
                        replays[audience, after] = feeds_after_traced(
                            network_id=network_id, audiences=[audience], after=after, upto=head, limit=PAGE
                        )
                    replay = replays[audience, after]
                    frames = [(frame, trace) for _, frame, trace in replay]
                    if len(replay) == PAGE:  # more to replay before anything newer
                        handed.append((stream, frames, replay[-1][1]["id"]))
                        continue
                frames += [(frame, trace) for to, frame, trace in new if to == audience and frame["id"] > after]
                handed.append((stream, frames, max(after, top)))
            # Receipts before any frame leaves (README: delivery receipts), one transaction a round.
            for via in {stream.receipts for stream, _, _ in handed} - {None}:
                deliveries_mark(
                    network_ids=[network_id],
                    deliveries=[
                        (stream.audience, *named)
                        for stream, frames, _ in handed
                        if stream.receipts == via
                        for named in _named(frames)
                    ],
                    via=via,
                )
            return _Round(handed, top, again=len(new) == PAGE or bool(replays))

        return read

    def _hand(self, round: _Round) -> bool:
        """Hand each stream still here its frames; True if the log has more to read at once."""
        self.head = max(self.head, round.head)
        for stream, frames, after in round.handed:
            if stream not in self.streams:
                continue
            stream.after = after
            if frames:
                stream.pending += frames
                stream.ready.set()
                stream.paused = len(stream.pending) >= PAGE  # a client this slow is caught up later
        return round.again


def _named(frames: list[Frame]) -> list[tuple[str, str | None, str | None]]:
    """(message_id, type, task_id) of the frames that name an inbox message."""
    return [
        (frame["payload"]["message_id"], frame["payload"].get("type"), frame["payload"].get("task_id"))
        for frame, _ in frames
        if frame["payload"].get("message_id")
    ]


async def _off_loop(call: Callable[[], T]) -> T:
    """Run sync database code on the readers' own threads."""
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(max_workers=READ_THREADS, thread_name_prefix="feed-reader")
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(_executor, context.run, _fresh(call))


def _fresh(call: Callable[[], T]) -> Callable[[], T]:
    def run() -> T:
        close_old_connections()  # no request signals here: drop stale connections, give pooled ones back
        try:
            return call()
        finally:
            close_old_connections()

    return run
