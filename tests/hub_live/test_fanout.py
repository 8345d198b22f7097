"""Fan-out (hub_live.fanout): a process's streams of a network share one reader, which reads the log
once per ring for all of them and hands each stream every frame of its feed once, in order, from its
own position; a late joiner replays from its Last-Event-ID; a reader left without streams leaves the
channel layer. (End to end over SSE and the dashboard socket: test_live_delivery.py.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import InMemoryChannelLayer, get_channel_layer

from hub_core.doorbell import feed_group
from hub_events.selectors import events_position
from hub_live import fanout
from tests.helpers.calls import send_task

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reads(monkeypatch) -> list[dict[str, Any]]:
    """Every read of the log the readers make."""
    made: list[dict[str, Any]] = []
    real = fanout.feeds_after_traced

    def read(**arguments: Any) -> list:
        made.append(arguments)
        return real(**arguments)

    monkeypatch.setattr(fanout, "feeds_after_traced", read)
    return made


async def _send(agent, task: str) -> None:
    await sync_to_async(send_task)(actor=agent, alias="coder", task=task)


async def _tasks(stream: fanout.Stream, count: int) -> list[tuple[int, str]]:
    """(id, content) of the next `count` new_task frames the stream is handed, and no later ones."""
    got: list[tuple[int, str]] = []
    while len(got) < count:
        frames = await stream.next(10)
        assert frames, f"no frame within 10 s after {got}"
        got += [(frame["id"], frame["payload"]["content"]) for frame, _ in frames if frame["type"] == "new_task"]
    return got


def test_streams_of_one_feed_share_one_read_per_ring(network, agent, reads):
    async def run() -> tuple[list[list[tuple[int, str]]], int]:
        start = await sync_to_async(events_position)(network_id=network.id)
        streams = [await fanout.join(network_id=network.id, audience="coder", after=start) for _ in range(5)]
        await asyncio.sleep(0.5)  # the joins' reads are done
        reads.clear()
        await _send(agent, "one")
        got = [await _tasks(stream, 1) for stream in streams]
        count = len(reads)
        for stream in streams:
            fanout.leave(stream)
        return got, count

    got, count = async_to_sync(run)()

    assert count == 1  # one read for five streams
    assert len({tuple(frames) for frames in got}) == 1 and got[0][0][1] == "one"


def test_each_stream_gets_every_frame_once_in_order_and_a_late_joiner_replays(network, agent, reads, monkeypatch):
    monkeypatch.setattr(fanout, "PAGE", 2)  # replays in pages of two

    async def run() -> tuple[list[tuple[int, str]], ...]:
        start = await sync_to_async(events_position)(network_id=network.id)
        first = await fanout.join(network_id=network.id, audience="coder", after=start)
        for n in range(5):
            await _send(agent, f"task {n}")
        early = await _tasks(first, 5)
        late = await fanout.join(network_id=network.id, audience="coder", after=start)  # Last-Event-ID: start
        replayed = await _tasks(late, 5)
        middle = await fanout.join(network_id=network.id, audience="coder", after=early[1][0])
        await _send(agent, "task 5")
        ends = [await _tasks(stream, count) for stream, count in ((first, 1), (late, 1), (middle, 4))]
        quiet = [await stream.next(0.3) for stream in (first, late, middle)]
        for stream in (first, late, middle):
            fanout.leave(stream)
        return early, replayed, *ends, quiet

    early, replayed, first_end, late_end, middle_all, quiet = async_to_sync(run)()

    assert [content for _, content in early] == [f"task {n}" for n in range(5)]
    assert [item[0] for item in early] == sorted({item[0] for item in early})  # in order, none twice
    assert replayed == early
    assert first_end == late_end and first_end[0][1] == "task 5"
    assert middle_all == [*early[2:], *first_end]  # from its own position on
    assert quiet == [[], [], []]  # nothing more, nothing twice


def test_a_stream_that_takes_nothing_for_a_while_is_caught_up_from_the_log(network, agent, monkeypatch):
    monkeypatch.setattr(fanout, "PAGE", 2)  # handed two frames not taken yet, a stream is set aside

    async def run() -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
        start = await sync_to_async(events_position)(network_id=network.id)
        slow = await fanout.join(network_id=network.id, audience="coder", after=start)
        brisk = await fanout.join(network_id=network.id, audience="coder", after=start)
        taken = []
        for n in range(6):
            await _send(agent, f"task {n}")
            taken += await _tasks(brisk, 1)
        late = await _tasks(slow, 6)
        fanout.leave(slow)
        fanout.leave(brisk)
        return taken, late

    taken, late = async_to_sync(run)()

    assert [content for _, content in taken] == [f"task {n}" for n in range(6)]
    assert late == taken


def test_a_reader_left_without_streams_stops_and_leaves_the_layer(network, agent):
    layer = get_channel_layer()

    async def run() -> tuple[list[str], list[str], bool, bool]:
        start = await sync_to_async(events_position)(network_id=network.id)
        streams = [await fanout.join(network_id=network.id, audience=alias, after=start) for alias in ("coder", "")]
        serving = fanout.readers()
        joined = _members(layer, feed_group(network.id, "coder"))
        fanout.leave(streams[0])
        await asyncio.sleep(0.3)
        left_one = _members(layer, feed_group(network.id, "coder"))
        fanout.leave(streams[1])
        await asyncio.sleep(0.3)
        return serving, fanout.readers(), joined and not left_one, not _members(layer, feed_group(network.id, ""))

    serving, after, coder_left, operators_left = async_to_sync(run)()

    assert serving == [network.id]
    assert after == []
    if isinstance(layer, InMemoryChannelLayer):  # the layer's members are visible here
        assert coder_left and operators_left


def _members(layer: Any, group: str) -> bool:
    return bool(getattr(layer, "groups", {}).get(group))
