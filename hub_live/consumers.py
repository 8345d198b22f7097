"""/ws/dashboard: every event of the signed-in operator's networks, as JSON frames.

The connection joins, for each network, the process's reader of the network (hub_live.fanout),
which reads the log on each ring of the operators feed, once for every socket and stream it
serves, and hands the socket what it has not had. Readers look again now and then on their own
(rings the layer dropped), and a layer that is down (Redis) degrades them to polling. Reconnecting
clients pass where they were, `?after=net_a:120,net_b:7`, and get everything since.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any
from urllib.parse import parse_qs

from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from hub_agents.models import Membership
from hub_agents.services import session_actor
from hub_core.doorbell import QUIET_SECONDS
from hub_core.metrics import OPEN_STREAMS
from hub_core.waiting import in_pool
from hub_events.models import OPERATORS
from hub_events.selectors import events_position
from hub_live import fanout

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
        # Joined before the hello: nothing committed after the positions is missed. The process's
        # reader of each network reads the log for all the sockets and streams it serves (hub_live.fanout).
        self.streams: dict[str, fanout.Stream] = {}
        try:
            for network_id, after in self.positions.items():
                self.streams[network_id] = await fanout.join(network_id=network_id, audience=OPERATORS, after=after)
            # Counted from its accept; uncounted by disconnect (below) once it has its watcher, else here.
            OPEN_STREAMS.labels(transport="websocket").inc()
            try:
                await self.accept()
                await self.send_json({"type": "hello", "positions": self.positions})
            except BaseException:
                OPEN_STREAMS.labels(transport="websocket").dec()
                raise
        except BaseException:  # no watcher yet to leave the feeds: their readers must not outlive the socket
            self._leave()
            raise
        self.watcher = asyncio.create_task(self._watch())

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "watcher"):
            self.watcher.cancel()
            OPEN_STREAMS.labels(transport="websocket").dec()
            del self.watcher  # a second disconnect uncounts nothing
        self._leave()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        pass  # read-only: operators act through the dashboard's forms and the API; frames are ignored unread

    def _leave(self) -> None:
        for stream in getattr(self, "streams", {}).values():
            fanout.leave(stream)

    async def _watch(self) -> None:
        """Forward what each network's reader hands the socket; every COMMHUB_STREAM_RECHECK_SECONDS,
        however busy, re-check the session and the user."""
        every = float(settings.COMMHUB_STREAM_RECHECK_SECONDS)
        forwarders = [asyncio.create_task(self._forward(n, stream)) for n, stream in self.streams.items()]
        try:
            while True:
                await asyncio.sleep(every)
                try:
                    refused = await in_pool(self._refusal)
                except Exception:  # a passing database fault must not end the socket
                    logger.exception("dashboard re-check failed; retrying on the next check")
                    continue
                if refused:
                    await self.close(code=refused)
                    return
        finally:
            for forwarder in forwarders:
                forwarder.cancel()
            self._leave()

    async def _forward(self, network_id: str, stream: fanout.Stream) -> None:
        while True:
            for frame, _ in await stream.next(QUIET_SECONDS):
                await self.send_json(frame)
                self.positions[network_id] = frame["id"]

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
