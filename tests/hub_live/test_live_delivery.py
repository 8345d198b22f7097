"""Delivery against a live hub process: SSE with replay, long-poll, the operators' websocket."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import httpx
import pytest
import websockets
from django.test import Client

from hub_agents.models import AgentSession
from hub_agents.services import membership_set
from hub_events.selectors import events_position
from tests.helpers.live import sse_events

pytestmark = pytest.mark.django_db(transaction=True)


def test_sse_reconnect_with_last_event_id_gets_every_event_once_in_order(hub_server, agent_http, network):
    hub = hub_server()
    start = events_position(network_id=network.id)
    sent: list[str] = []
    sender = threading.Thread(
        target=lambda: sent.extend(agent_http.send_task(hub, "coder", f"task {n}")["task_id"] for n in range(100))
    )

    received: list[tuple[int, str]] = []
    stream = sse_events(hub, agent_http, "coder", last_event_id=start)
    sender.start()
    for event_id, _, frame in stream:
        received.append((event_id, frame["payload"]["task_id"]))
        if len(received) == 10:
            break
    stream.close()  # the connection dies mid-way; sending goes on

    for event_id, kind, frame in sse_events(hub, agent_http, "coder", last_event_id=received[-1][0]):
        assert kind == "new_task"
        received.append((event_id, frame["payload"]["task_id"]))
        if len(received) == 100:
            break
    sender.join(timeout=60)

    ids = [event_id for event_id, _ in received]
    assert ids == sorted(set(ids)), "each event once, in order"
    assert [task_id for _, task_id in received] == sent


def test_sse_connection_keeps_the_agent_online(hub_server, agent_http, network):
    hub = hub_server()
    AgentSession.objects.create(network=network, resume_id="r1", alias="coder", status="idle")
    AgentSession.objects.filter(alias="coder").update(last_seen_at="2020-01-01T00:00:00Z")

    stream = sse_events(hub, agent_http, "coder", last_event_id=events_position(network_id=network.id))
    sender = threading.Thread(target=lambda: agent_http.send_task(hub, "coder", "ping me"), daemon=True)
    sender.start()
    next(stream)
    stream.close()
    sender.join(timeout=30)  # its answer arrives before the server is stopped

    assert AgentSession.objects.get(alias="coder").last_seen_at.year >= 2026


def test_sse_refuses_without_a_token_or_for_another_network(hub_server, agent_http, other_network):
    hub = hub_server()
    anonymous = httpx.get(f"{hub.url}/events/coder")
    foreign = httpx.get(f"{hub.url}/events/coder", params={"network_id": other_network.id}, headers=agent_http.headers)

    assert anonymous.status_code == 401
    assert anonymous.headers["WWW-Authenticate"].startswith("Bearer")
    assert (foreign.status_code, foreign.json()["error"]) == (403, "permission_denied")


@pytest.mark.parametrize("transport", ["rest", "mcp"])
def test_long_poll_answers_within_a_second_of_a_task_being_sent(hub_server, agent_http, transport):
    hub = hub_server()
    wait = agent_http.inbox if transport == "rest" else agent_http.mcp_inbox
    answered: dict[str, Any] = {}

    def waiter() -> None:
        answered["reply"] = wait(hub, "coder", wait_seconds=30)
        answered["at"] = time.monotonic()

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(1.0)  # the waiter is waiting by now
    assert "reply" not in answered
    sent = agent_http.send_task(hub, "coder", "wake up")
    sent_at = time.monotonic()
    thread.join(timeout=30)

    assert [message["id"] for message in answered["reply"]["messages"]] == [sent["task_id"]]
    assert answered["at"] - sent_at < 1.0


def test_long_poll_answers_empty_when_its_time_is_up(hub_server, agent_http):
    hub = hub_server()
    started = time.monotonic()

    reply = agent_http.inbox(hub, "nobody", wait_seconds=1.5)

    assert reply == {"ok": True, "messages": []}
    assert 1.5 <= time.monotonic() - started < 5


def test_two_hundred_waiters_hold_no_database_connections(hub_server, agent_http):
    hub = hub_server()

    async def wait_all() -> list[dict[str, Any]]:
        limits = httpx.Limits(max_connections=300)
        async with httpx.AsyncClient(headers=agent_http.headers, limits=limits, timeout=90) as client:

            async def one() -> dict[str, Any]:
                reply = await client.get(f"{hub.url}/api/v1/sessions/coder/inbox", params={"wait_seconds": 60})
                assert reply.status_code == 200, f"{reply.text}\n--- server log ---\n{hub.log.read_text()[-4000:]}"
                return reply.json()

            waiting = [asyncio.create_task(one()) for _ in range(200)]
            await asyncio.sleep(4)  # all 200 are waiting by now
            held = await asyncio.to_thread(hub.db_connection_count)
            assert not any(task.done() for task in waiting)
            await asyncio.to_thread(agent_http.send_task, hub, "coder", "for everyone")
            started = time.monotonic()
            replies = await asyncio.gather(*waiting)
            assert time.monotonic() - started < 10
            waiters["held"] = held
            return replies

    waiters: dict[str, int] = {}
    replies = asyncio.run(wait_all())

    assert all(len(reply["messages"]) == 1 for reply in replies)
    # The pool's few threads may keep a connection each; 200 waiters must not hold 200.
    assert waiters["held"] <= 12


def test_dashboard_websocket_pushes_new_tasks_and_catches_up(hub_server, agent_http, network, django_user_model):
    hub = hub_server()
    operator = django_user_model.objects.create_user("operator", password="x")
    membership_set(user=operator, network=network, role="viewer")
    browser = Client()
    browser.force_login(operator)
    cookie = f"sessionid={browser.cookies['sessionid'].value}"
    ws_url = hub.url.replace("http", "ws") + "/ws/dashboard"

    async def watch() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        async with websockets.connect(ws_url, origin=hub.url, additional_headers={"Cookie": cookie}) as socket:
            hello = json.loads(await socket.recv())
            await asyncio.to_thread(agent_http.send_task, hub, "coder", "shown live")
            live = [json.loads(await asyncio.wait_for(socket.recv(), 5))]
        position = live[-1]["id"]
        await asyncio.to_thread(agent_http.send_task, hub, "coder", "sent while away")
        after = f"?after={network.id}:{position}"
        async with websockets.connect(ws_url + after, origin=hub.url, additional_headers={"Cookie": cookie}) as socket:
            assert json.loads(await socket.recv())["type"] == "hello"
            missed = [json.loads(await asyncio.wait_for(socket.recv(), 5))]
        return [hello, *live], missed

    seen, missed = asyncio.run(watch())

    hello, live = seen
    assert hello["type"] == "hello" and network.id in hello["positions"]
    assert (live["type"], live["to"], live["payload"]["content"]) == ("new_task", ["coder"], "shown live")
    (caught_up,) = missed
    assert (caught_up["type"], caught_up["payload"]["content"]) == ("new_task", "sent while away")
    assert caught_up["id"] > live["id"]


def test_dashboard_websocket_refuses_anonymous_users(hub_server):
    hub = hub_server()
    ws_url = hub.url.replace("http", "ws") + "/ws/dashboard"

    async def attempt() -> int | None:
        async with websockets.connect(ws_url, origin=hub.url) as socket:
            try:
                await asyncio.wait_for(socket.recv(), 5)
            except websockets.ConnectionClosed as closed:
                return closed.rcvd.code if closed.rcvd else None
        return None

    try:
        code = asyncio.run(attempt())
    except websockets.InvalidStatus as refused:  # refused during the handshake
        code = refused.response.status_code
    assert code in (4401, 403)
