"""/ws/dashboard: every event of the signed-in operator's networks, as JSON frames.

The connection listens on a doorbell (hub_core.doorbell) for each network's operators feed; a ring
means "read the log after where you are". A periodic catch-up covers rings the layer dropped, and
a layer that is down (Redis) degrades the socket to polling instead of closing it. Reconnecting
clients pass where they were, `?after=net_a:120,net_b:7`, and get everything since.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from typing import Any
from urllib.parse import parse_qs

from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from hub_agents.models import Membership
from hub_agents.services import session_actor
from hub_core.doorbell import Doorbell, feed_group
from hub_core.metrics import OPEN_STREAMS
from hub_core.waiting import in_pool
from hub_events.models import OPERATORS
from hub_events.selectors import PAGE, events_after, events_position
from hub_events.services import events_seal_leftovers

logger = logging.getLogger(__name__)


class DashboardConsumer(AsyncJsonWebsocketConsumer):
    # No channel of the consumer's own: Channels would end the socket when the layer fails. The
    # watcher task's doorbell survives that.
    channel_layer_alias = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        networks = await in_pool(
            lambda: list(Membership.objects.filter(user=user).values_list("network_id", flat=True))
        )
        # Kept to re-check the session itself later: logout deletes it, a password change stales its hash.
        self.session_key = self.scope["session"].session_key
        self.user_id = user.pk
        asked = _positions(self.scope.get("query_string", b""))
        self.positions: dict[str, int] = {}
        for network_id in networks:
            self.positions[network_id] = (
                asked[network_id]
                if network_id in asked
                else await in_pool(lambda n=network_id: events_position(network_id=n))
            )
        self.lock = asyncio.Lock()
        bell = await Doorbell(feed_group(network_id, OPERATORS) for network_id in self.positions).__aenter__()
        # Counted from its accept; uncounted by disconnect (below) once it has its watcher, else here.
        OPEN_STREAMS.labels(transport="websocket").inc()
        try:
            await self.accept()
            await self.send_json({"type": "hello", "positions": self.positions})
            await self.catch_up()
        except BaseException:  # no watcher yet to close the bell: its listener must not outlive the socket
            OPEN_STREAMS.labels(transport="websocket").dec()
            await bell.__aexit__(None, None, None)
            raise
        self.watcher = asyncio.create_task(self._watch(bell))

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "watcher"):
            self.watcher.cancel()
            OPEN_STREAMS.labels(transport="websocket").dec()
            del self.watcher  # a second disconnect uncounts nothing

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        pass  # read-only: operators act through the dashboard's forms and the API; frames are ignored unread

    async def catch_up(self) -> None:
        async with self.lock:  # one reader at a time, so no frame goes out twice
            for network_id, after in self.positions.items():
                while True:
                    frames = await in_pool(
                        lambda n=network_id, a=after: events_after(network_id=n, audience=OPERATORS, after=a)
                    )
                    for frame in frames:
                        await self.send_json(frame)
                        after = frame["id"]
                    self.positions[network_id] = after
                    if len(frames) < PAGE:
                        break

    async def _watch(self, bell: Doorbell) -> None:
        """Catch up on every ring; every COMMHUB_STREAM_RECHECK_SECONDS, however busy, also
        re-check the session, the user and the layer."""
        every = float(settings.COMMHUB_STREAM_RECHECK_SECONDS)
        next_check = time.monotonic() + every
        try:
            while True:
                await bell.wait(next_check - time.monotonic())
                try:
                    if time.monotonic() >= next_check:
                        next_check = time.monotonic() + every
                        refused = await self._recheck(bell)
                        if refused:
                            await self.close(code=refused)
                            return
                    await self.catch_up()
                except Exception:  # a passing database fault must not end the catch-ups
                    logger.exception("dashboard catch-up failed; retrying on the next ring or check")
        finally:
            await bell.__aexit__(None, None, None)

    async def _recheck(self, bell: Doorbell) -> int | None:
        """The close code if the user may no longer watch; else re-join the feeds (layers forget
        members after their group expiry) and seal what a dead process left unsealed."""
        refused = await in_pool(self._refusal)
        if refused:
            return refused
        await bell.renew()
        for network_id in self.positions:
            await in_pool(lambda n=network_id: events_seal_leftovers(network_id=n))
        return None

    def _refusal(self) -> int | None:
        actor = session_actor(session_key=self.session_key)
        if actor is None or actor.user_id != self.user_id:
            return 4401  # logged out, session expired, password changed, or user deactivated
        if not set(self.positions) <= set(actor.readable_networks()):
            return 4403  # removed from a network it watches
        return None


def _positions(query_string: bytes) -> dict[str, int]:
    positions = {}
    for item in ",".join(parse_qs(query_string.decode()).get("after", [])).split(","):
        network_id, _, seq = item.partition(":")
        if network_id and re.fullmatch(r"[0-9]{1,18}", seq):
            positions[network_id] = int(seq)
    return positions
