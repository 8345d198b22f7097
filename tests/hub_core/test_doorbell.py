"""The doorbell on whatever layer this run has: a ring wakes a waiter, and no wait outlasts
QUIET_SECONDS, so a ring lost on the way (Redis Pub/Sub drops what it cannot deliver, silently)
costs a reader that long at most."""

from __future__ import annotations

import asyncio

from channels.layers import get_channel_layer

from hub_core import doorbell
from hub_core.doorbell import Doorbell, feed_group


def test_a_ring_wakes_and_a_long_quiet_wait_looks_again_after_quiet_seconds(monkeypatch):
    monkeypatch.setattr(doorbell, "QUIET_SECONDS", 0.3)
    group = feed_group("net_doorbell_unit", "coder")

    async def scenario() -> tuple[bool, bool, bool, float]:
        async with Doorbell([group]) as bell:
            short = await bell.wait(0.1)  # shorter than the cap: quiet means no ring
            started = asyncio.get_running_loop().time()
            capped = await bell.wait(30)  # longer than the cap: "look again" once the cap passes
            waited = asyncio.get_running_loop().time() - started
            await get_channel_layer().group_send(group, {"type": "feed.ring"})
            rang = await bell.wait(5)
        return short, capped, rang, waited

    short, capped, rang, waited = asyncio.run(scenario())

    assert (short, capped, rang) == (False, True, True)
    assert waited < 5
