"""A long-poll answered as SSE over real HTTP: the framing, when it is chosen, and what it holds.

A client that accepts `text/event-stream` and sends `params._meta.progressToken` gets a get_inbox
that has to wait as an SSE answer: `notifications/progress` at once and every few seconds (every
second in these hubs), then the JSON-RPC result, then the end. Everyone else gets JSON as before.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.helpers.live import Agent, Hub

pytestmark = pytest.mark.django_db(transaction=True)

LATEST = "2025-11-25"
MODERN = "2026-07-28"
SSE_AND_JSON = "application/json, text/event-stream"


@pytest.fixture
def hub(hub_server) -> Hub:
    return hub_server(env={"COMMHUB_LONG_POLL_PROGRESS_SECONDS": "1"})


def get_inbox(
    alias: str, wait_seconds: float, *, version: str | None = LATEST, progress_token: Any = None, id: Any = 1
) -> tuple[dict[str, Any], dict[str, str]]:
    """The body and headers of a tools/call get_inbox in the era `version` names."""
    params: dict[str, Any] = {"name": "get_inbox", "arguments": {"alias": alias, "wait_seconds": wait_seconds}}
    meta: dict[str, Any] = {}
    headers: dict[str, str] = {}
    if version is not None:
        headers["MCP-Protocol-Version"] = version
    if version == MODERN:
        meta |= {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
        headers |= {"Mcp-Method": "tools/call", "Mcp-Name": "get_inbox"}
    if progress_token is not None:
        meta["progressToken"] = progress_token
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}, headers


def events(reply: httpx.Response) -> Iterator[tuple[list[str], dict[str, Any]]]:
    """(the event's field lines, its data decoded) for each SSE event, as they arrive."""
    lines: list[str] = []
    for line in reply.iter_lines():
        if line:
            lines.append(line)
            continue
        if lines:
            data = [field.removeprefix("data: ") for field in lines if field.startswith("data: ")]
            yield lines, json.loads("\n".join(data))
            lines = []
    assert not lines, f"the stream ended inside an event: {lines}"


def stream(hub: Hub, agent: Agent, body: dict[str, Any], headers: dict[str, str], accept: str | None = SSE_AND_JSON):
    sent = {**agent.headers, **headers, "Content-Type": "application/json"}
    if accept is not None:
        sent["Accept"] = accept
    return httpx.stream("POST", f"{hub.url}/mcp", json=body, headers=sent, timeout=30)


def tool_result(message: dict[str, Any]) -> dict[str, Any]:
    return json.loads(message["result"]["content"][0]["text"])


@pytest.mark.parametrize(("version", "token"), [(None, "p-1"), (LATEST, 7), (MODERN, "p-2")])
def test_a_long_poll_that_waits_is_answered_as_sse_progress_then_the_result(hub, agent_http, version, token):
    body, headers = get_inbox("coder", 2.5, version=version, progress_token=token, id="req-9")

    with stream(hub, agent_http, body, headers) as reply:
        assert reply.status_code == 200
        assert reply.headers["Content-Type"].startswith("text/event-stream")
        assert reply.headers["Cache-Control"] == "no-cache"
        received = list(events(reply))  # to the end: the stream closes after the result

    for fields, _ in received:
        # One JSON-RPC message per event, as the default "message" event, and no id to resume by:
        # a client must not reconnect for an answer that is kept nowhere.
        assert [field.partition(": ")[0] for field in fields] == ["event", "data"]
        assert fields[0] == "event: message"
    *progress, answer = [message for _, message in received]
    assert len(progress) >= 3  # at once, then every second of the 2.5 s wait
    for notification in progress:
        assert notification["jsonrpc"] == "2.0" and "id" not in notification
        assert notification["method"] == "notifications/progress"
        assert notification["params"]["progressToken"] == token
        # The wait asked for, counted from the request's start: the first read's own time (a cold
        # connection on PostgreSQL, a busy test worker) comes on top of it, never off it.
        assert 2.2 <= notification["params"]["total"] <= 4.0
        assert isinstance(notification["params"]["message"], str)
    values = [notification["params"]["progress"] for notification in progress]
    assert values == sorted(set(values)), "progress increases with each notification"
    assert (answer["jsonrpc"], answer["id"]) == ("2.0", "req-9")
    assert tool_result(answer) == {"ok": True, "messages": []}
    if version == MODERN:
        assert answer["result"]["resultType"] == "complete"


def test_a_message_sent_during_an_sse_long_poll_is_its_result(hub, agent_http):
    body, headers = get_inbox("coder", 30, progress_token="p-3")

    with stream(hub, agent_http, body, headers) as reply:
        received = events(reply)
        for _ in range(2):  # the wait is under way, and reported, before anything is sent
            _, notification = next(received)
            assert notification["method"] == "notifications/progress"
        sent = agent_http.send_task(hub, "coder", "wake up")
        rest = [message for _, message in received]

    answer = rest[-1]
    assert all(message["method"] == "notifications/progress" for message in rest[:-1])
    assert [message["id"] for message in tool_result(answer)["messages"]] == [sent["task_id"]]


@pytest.mark.parametrize(
    ("accept", "token"),
    [
        (SSE_AND_JSON, None),  # no progress asked for
        ("application/json", "p-4"),  # SSE not accepted
        (None, "p-5"),  # no Accept at all
        ("application/json, text/event-stream;q=0", "p-6"),  # SSE explicitly refused
    ],
)
def test_without_a_progress_token_or_an_accepted_event_stream_the_answer_is_json(hub, agent_http, accept, token):
    body, headers = get_inbox("coder", 1.5, progress_token=token)

    with stream(hub, agent_http, body, headers, accept=accept) as reply:
        reply.read()

    assert reply.status_code == 200
    assert reply.headers["Content-Type"].startswith("application/json")
    assert tool_result(reply.json()) == {"ok": True, "messages": []}


def test_a_long_poll_that_need_not_wait_answers_json_even_with_a_progress_token(hub, agent_http):
    agent_http.send_task(hub, "coder", "already here")
    answers = []
    for alias, wait in (("coder", 30), ("nobody", 0)):  # a message is waiting; the caller will not wait
        body, headers = get_inbox(alias, wait, progress_token="p-7")
        with stream(hub, agent_http, body, headers) as reply:
            reply.read()
        assert reply.headers["Content-Type"].startswith("application/json")
        answers.append(tool_result(reply.json())["messages"])

    assert [[message["content"] for message in messages] for messages in answers] == [["already here"], []]


def test_sse_waiters_hold_no_database_connections(hub, agent_http):
    async def wait_all() -> tuple[int, list[dict[str, Any]]]:
        limits = httpx.Limits(max_connections=100)
        async with httpx.AsyncClient(headers=agent_http.headers, limits=limits, timeout=60) as client:
            started = asyncio.Event()
            count = {"started": 0}

            async def one(n: int) -> dict[str, Any]:
                body, headers = get_inbox("coder", 60, progress_token=n)
                headers |= {"Accept": SSE_AND_JSON}
                async with client.stream("POST", f"{hub.url}/mcp", json=body, headers=headers) as reply:
                    assert reply.headers["Content-Type"].startswith("text/event-stream")
                    last, counted = None, False
                    async for line in reply.aiter_lines():
                        if line.startswith("data: "):
                            last = json.loads(line.removeprefix("data: "))
                            waited = last.get("method") == "notifications/progress" and last["params"]["progress"] >= 2
                            if waited and not counted:
                                counted = True
                                count["started"] += 1
                                if count["started"] == 50:
                                    started.set()
                    return last

            waiting = [asyncio.create_task(one(n)) for n in range(50)]
            await asyncio.wait_for(started.wait(), 30)  # every waiter has waited 2 s, and said so
            held = await asyncio.to_thread(hub.db_connection_count)
            assert not any(task.done() for task in waiting)
            await asyncio.to_thread(agent_http.send_task, hub, "coder", "for everyone")
            return held, await asyncio.gather(*waiting)

    held, answers = asyncio.run(wait_all())

    assert all(tool_result(answer)["messages"][0]["content"] == "for everyone" for answer in answers)
    # The pool's few threads may keep a connection each; 50 waiters must not hold 50.
    assert held <= 12
