"""The doorbell on the Redis channel layer this hub is configured with: a quiet wait is not a fault."""

from __future__ import annotations

import asyncio

import pytest
from channels.layers import get_channel_layer
from django.conf import settings

from hub_core.doorbell import Doorbell, feed_group


@pytest.fixture(autouse=True)
def redis_layer():
    if not settings.REDIS_URL:
        pytest.skip("needs Redis (CI's second run)")


def test_a_wait_longer_than_a_blocking_read_stays_on_the_layer_and_still_rings():
    # channels_redis blocks 5 s per read (BZPOPMIN); redis-py 8 also gives every socket a 5 s read
    # timeout by default, so a quiet wait used to end in "Timeout reading" and a doorbell that
    # believed Redis was down.
    group = feed_group("net_doorbell_test", "quiet")

    async def scenario() -> tuple[bool, bool, bool]:
        async with Doorbell([group]) as bell:
            quiet = await bell.wait(7)
            broken_after_quiet = bell.broken
            await get_channel_layer().group_send(group, {"type": "feed.ring"})
            rang = await bell.wait(5)
        return quiet, broken_after_quiet, rang

    quiet, broken, rang = asyncio.run(scenario())

    assert (quiet, broken, rang) == (False, False, True)
