"""Dispatch-to-delivery: from the moment send_task is called to the frame at the agent (SSE) and
at an operator's dashboard websocket, with 100 agents connected and tasks sent at a steady rate."""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp
from django.test import Client

from bench import calls
from bench.load import Row
from bench.server import Server
from bench.setup import Fleet

AGENTS = 100
RATES = (25, 100)  # tasks a second: well under this machine's send_task capacity, and the target's rate
TARGET_RATE = 100
SECONDS = 8
GRACE = 30  # after the last send, how long a frame may still arrive before it counts as lost


async def run(hub: Server, fleet: Fleet, *, rates: tuple[int, ...] = RATES, seconds: float = SECONDS) -> list[Row]:
    rows = []
    for rate in rates:
        rows += await _at_rate(hub, fleet, rate, seconds)
    return rows


def label(rate: int) -> str:
    return f"{AGENTS} agents, {rate} tasks/s"


async def _at_rate(hub: Server, fleet: Fleet, rate: int, seconds: float) -> list[Row]:
    sent: dict[str, float] = {}
    at_agent: dict[str, float] = {}
    at_operator: dict[str, float] = {}
    ready = asyncio.Event()
    connected = 0

    async def agent(session: aiohttp.ClientSession, number: int) -> None:
        nonlocal connected
        headers = {"Authorization": f"Bearer {fleet.agent_tokens[number]}"}
        async with session.get(f"{hub.url}/events/deliver-{number}", headers=headers) as stream:
            connected += 1
            if connected == AGENTS:
                ready.set()
            async for line in stream.content:
                if line.startswith(b"data: "):
                    frame = json.loads(line[6:])
                    if frame["type"] == "new_task":
                        at_agent[frame["payload"]["content"]] = time.perf_counter()

    async def operator(session: aiohttp.ClientSession) -> None:
        cookie = _operator_cookie()
        url = hub.url.replace("http", "ws") + "/ws/dashboard"
        async with session.ws_connect(url, headers={"Cookie": cookie, "Origin": hub.url}) as socket:
            async for message in socket:
                frame = json.loads(message.data)

                if frame.get("type") == "new_task":
                    at_operator.setdefault(frame["payload"]["content"], time.perf_counter())

    async def send(session: aiohttp.ClientSession, number: int) -> None:
        content = f"deliver {rate}/s {number}"
        sent[content] = time.perf_counter()
        await calls.tool(session, hub.url, "send_task", {"alias": f"deliver-{number % AGENTS}", "task": content})

    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    unlimited = aiohttp.TCPConnector(limit=0)  # the default 100 would leave the websocket queued behind the streams
    async with (
        aiohttp.ClientSession(timeout=timeout, connector=unlimited) as listeners,
        aiohttp.ClientSession(headers=calls.bearer(fleet.operator_token)) as sender,
    ):
        watchers = [asyncio.create_task(agent(listeners, n)) for n in range(AGENTS)]
        watchers.append(asyncio.create_task(operator(listeners)))
        await asyncio.wait_for(ready.wait(), 30)
        await asyncio.sleep(1)
        for watcher in watchers:
            if watcher.done():
                watcher.result()  # a listener that could not connect fails the run, loudly
        await asyncio.sleep(1)
        sends = []
        start = time.perf_counter()
        for number in range(round(rate * seconds)):
            await asyncio.sleep(max(0.0, start + number / rate - time.perf_counter()))
            sends.append(asyncio.create_task(send(sender, number)))
        await asyncio.gather(*sends)
        until = time.perf_counter() + GRACE
        while time.perf_counter() < until and (len(at_agent) < len(sent) or len(at_operator) < len(sent)):
            await asyncio.sleep(0.1)
        for watcher in watchers:
            watcher.cancel()
    return [
        _row(f"SSE new_task → agent ({label(rate)})", sent, at_agent),
        _row(f"websocket new_task → dashboard ({label(rate)})", sent, at_operator),
    ]


def _row(name: str, sent: dict[str, float], arrived: dict[str, float]) -> Row:
    row = Row("delivery", name, AGENTS)
    row.latencies = [arrived[content] - at for content, at in sent.items() if content in arrived]
    row.requests = len(sent)
    row.errors = len(sent) - len(row.latencies)  # lost: never arrived
    return row


def _operator_cookie() -> str:
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from hub_agents.models import Network
    from hub_agents.services import membership_set

    user, _ = get_user_model().objects.get_or_create(username="bench-operator")
    membership_set(user=user, network=Network.objects.get(name="bench"), role="viewer", by="bench")
    browser = Client()
    browser.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={browser.cookies[settings.SESSION_COOKIE_NAME].value}"
