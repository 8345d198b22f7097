"""A hub whose Redis is unreachable: writes and reads work, pushes degrade to polling the event log."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from typing import Any

import httpx
import pytest
import websockets
from django.test import Client

from hub_agents.services import membership_set
from tests.helpers.live import sse_events

pytestmark = pytest.mark.django_db(transaction=True)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens there once the probe is closed


@pytest.fixture
def hub(hub_server):
    # Two writes a minute: the limit would refuse the third, if its store (this Redis) were there.
    return hub_server(env={"REDIS_URL": f"redis://127.0.0.1:{closed_port()}/0", "COMMHUB_WRITE_RATE_LIMIT": "2/minute"})


def test_writes_and_reads_work_without_redis(hub, agent_http):
    sent = agent_http.send_task(hub, "coder", "written all the same")

    assert sent["ok"] is True
    inbox = agent_http.inbox(hub, "coder")
    assert [message["content"] for message in inbox["messages"]] == ["written all the same"]
    assert agent_http.mcp_inbox(hub, "coder")["messages"][0]["task_id"] == sent["task_id"]


def test_a_long_poll_still_answers_soon_after_a_send(hub, agent_http):
    answer: dict[str, Any] = {}

    def wait() -> None:
        answer["reply"] = agent_http.inbox(hub, "coder", wait_seconds=20)
        answer["at"] = time.monotonic()

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(1)
    sent_at = time.monotonic()
    agent_http.send_task(hub, "coder", "found by polling")
    waiter.join(timeout=30)

    assert [message["content"] for message in answer["reply"]["messages"]] == ["found by polling"]
    assert answer["at"] - sent_at < 5  # the degraded doorbell looks again every few seconds


def test_an_sse_stream_still_delivers_from_the_event_log(hub, agent_http):
    frames: list[tuple[int, str, dict[str, Any]]] = []
    opened = threading.Event()

    def listen() -> None:
        stream = sse_events(hub, agent_http, "coder", within=30)
        opened.set()
        for frame in stream:
            frames.append(frame)
            return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    opened.wait(10)
    time.sleep(1)  # the stream is open and subscribed (or, here, polling)
    agent_http.send_task(hub, "coder", "pushed without Redis")
    listener.join(timeout=20)

    assert [(kind, frame["payload"]["content"]) for _, kind, frame in frames] == [("new_task", "pushed without Redis")]


def test_the_dashboard_websocket_stays_open_and_catches_up(hub, agent_http, network, django_user_model):
    operator = django_user_model.objects.create_user("operator", password="x")
    membership_set(user=operator, network=network, role="viewer")
    browser = Client()
    browser.force_login(operator)
    cookie = f"sessionid={browser.cookies['sessionid'].value}"

    async def watch() -> list[dict[str, Any]]:
        url = hub.url.replace("http", "ws") + "/ws/dashboard"
        async with websockets.connect(url, origin=hub.url, additional_headers={"Cookie": cookie}) as ws:
            hello = json.loads(await ws.recv())
            await asyncio.to_thread(agent_http.send_task, hub, "coder", "seen without Redis")
            return [hello, json.loads(await asyncio.wait_for(ws.recv(), 10))]

    hello, pushed = asyncio.run(watch())

    assert hello["type"] == "hello"
    assert (pushed["type"], pushed["payload"]["content"]) == ("new_task", "seen without Redis")


def test_rate_limits_fail_open_without_their_store(hub, agent_http):
    replies = [
        httpx.post(
            f"{hub.url}/api/v1/tasks", headers=agent_http.headers, json={"alias": "coder", "task": f"t{n}"}, timeout=30
        )
        for n in range(3)
    ]

    assert [reply.status_code for reply in replies] == [201, 201, 201]
