"""The channel layer as a doorbell: it says "look again", never what happened.

A ring carries no data, so a full channel (the layer drops messages past its capacity) or a
process that missed one costs a delay, never an event: readers page the event log by seq.
A layer that fails (Redis down) degrades a doorbell to polling: `wait` then returns every few
seconds so its reader looks again, and the next `renew` tries the layer again.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Iterable
from types import TracebackType

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)
RING = {"type": "feed.ring"}
POLL_SECONDS = 2.0  # how often a reader looks again while the layer is down


def feed_group(network_id: str, audience: str) -> str:
    """The layer group of one audience's feed (group names must be short ASCII)."""
    who = hashlib.sha256(audience.encode()).hexdigest()[:24] if audience else "operators"
    return f"feed.{network_id}.{who}"


def ring(groups: Iterable[str]) -> None:
    """Ring from sync code, after commit; a broken layer delays pushes, it never fails a write."""
    try:
        async_to_sync(_ring)(list(dict.fromkeys(groups)))
    except Exception:
        logger.exception("could not ring the doorbell; readers catch up from the event log")


async def _ring(groups: list[str]) -> None:
    layer = get_channel_layer()
    for group in groups:
        await layer.group_send(group, RING)


class Doorbell:
    """`async with Doorbell(groups) as bell: await bell.wait(seconds)`."""

    def __init__(self, groups: Iterable[str]) -> None:
        self.groups = list(groups)
        self.layer = get_channel_layer()
        self.channel = ""
        self.broken = False

    async def __aenter__(self) -> Doorbell:
        self.channel = await self.layer.new_channel()
        await self.renew()
        return self

    async def renew(self) -> None:
        """(Re)join the groups: layers forget members after their group expiry, or were down."""
        try:
            for group in self.groups:
                await self.layer.group_add(group, self.channel)
        except Exception:
            self._broke("join")
        else:
            self.broken = False

    async def wait(self, seconds: float) -> bool:
        """True if it rang within `seconds`; while the layer is down, True after a poll interval."""
        if self.broken:
            await asyncio.sleep(max(min(seconds, POLL_SECONDS), 0))
            await self.renew()  # try the layer again: a passing fault costs one interval, no more
            return True
        try:
            await asyncio.wait_for(self.layer.receive(self.channel), timeout=max(seconds, 0))
        except TimeoutError:
            return False
        except Exception:
            self._broke("receive")
            return True  # a ring may have been lost with the connection: look again now
        return True

    def _broke(self, what: str) -> None:
        if not self.broken:
            logger.warning("channel layer failed to %s; polling the event log until it is back", what, exc_info=True)
        self.broken = True

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        for group in self.groups:
            try:
                await self.layer.group_discard(group, self.channel)
            except Exception:  # leaving is best effort: the layer expires members anyway
                logger.debug("could not leave %s", group, exc_info=True)
