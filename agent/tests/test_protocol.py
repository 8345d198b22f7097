"""What the companion reads from the hub and writes to Claude Code, without a hub."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
from commhub_agent.channel import instructions, notification_for
from commhub_agent.hub import Config, Hub, HubUnavailable, parse_sse, truncate
from commhub_agent.runner import PROGRESS


def test_sse_frames_are_parsed_with_keepalives_and_multiline_data():
    lines = [
        "retry: 2000",
        "",
        ": keepalive",
        "",
        "id: 7",
        "event: new_task",
        'data: {"id": 7,',
        'data: "type": "new_task"}',
        "",
        "id: 8",
        "event: task_updated",
        "data: {}",
        "",
    ]

    async def collect() -> list:
        async def source():
            for line in lines:
                yield line

        return [event async for event in parse_sse(source())]

    assert anyio.run(collect) == [(7, "new_task", {"id": 7, "type": "new_task"}), (8, "task_updated", {})]


def test_a_new_task_becomes_a_channel_notification_with_string_meta():
    frame = {
        "id": 12,
        "type": "new_task",
        "created_at": "2026-11-24 06:00:00",
        "payload": {
            "message_id": "m-1",
            "type": "task",
            "priority": "high",
            "content": "write a quicksort",
            "from_session": "planner",
            "task_id": "t-1",
        },
    }
    note = notification_for(12, "new_task", frame)
    assert note["method"] == "notifications/claude/channel"
    assert note["params"]["content"] == "write a quicksort"
    meta = note["params"]["meta"]
    assert meta == {
        "event": "new_task",
        "event_id": "12",
        "message_id": "m-1",
        "task_id": "t-1",
        "from": "planner",
        "priority": "high",
        "kind": "task",
        "created_at": "2026-11-24 06:00:00",
    }
    assert all(key.isidentifier() for key in meta)  # Claude Code drops other keys


def test_a_chained_reply_names_the_parent_task_and_carries_the_result():
    payload = {
        "parent_task_id": "p",
        "child_task_id": "c",
        "from_alias": "coder",
        "status": "replied",
        "result": "tests pass",
        "message_id": "m",
    }
    note = notification_for(3, "chained_reply", {"payload": payload})
    assert note["params"]["content"] == "tests pass"
    assert note["params"]["meta"]["task_id"] == "p" and note["params"]["meta"]["child_task_id"] == "c"
    assert note["params"]["meta"]["from"] == "coder"


def test_an_open_task_says_what_it_needs_and_whose_claim_it_awaits():
    payload = {
        "task_id": "t-9",
        "priority": "normal",
        "content": "review the parser",
        "context": None,
        "from_session": "lead",
        "required_skills": ["python", "review"],
    }
    note = notification_for(7, "new_open_task", {"payload": payload})
    assert note["params"]["content"] == "review the parser"
    meta = note["params"]["meta"]
    assert (meta["event"], meta["task_id"], meta["needs"], meta["from"]) == (
        "new_open_task",
        "t-9",
        "python,review",
        "lead",
    )
    assert "claim_task" in instructions("coder") and "ask_operator" in instructions("coder")


def test_a_decided_approval_says_how_the_held_call_ended():
    payload = {
        "approval_id": "apr_1",
        "tool": "send_task",
        "status": "rejected",
        "approvals": 0,
        "decided_by": "user:alice",
        "reason": "rejected by user:alice: not on a Friday",
    }
    note = notification_for(8, "approval_updated", {"payload": payload})
    assert note["params"]["content"] == (
        "Your held send_task call (apr_1) is rejected: rejected by user:alice: not on a Friday"
    )
    meta = note["params"]["meta"]
    assert (meta["event"], meta["approval_id"], meta["status"], meta["from"]) == (
        "approval_updated",
        "apr_1",
        "rejected",
        "user:alice",
    )
    assert "pending_approval" in instructions("coder")


def test_instructions_say_how_to_take_report_and_complete():
    text = instructions("coder")
    for word in ("ack_inbox", "report_status", "report_completion", "send_reply", "task_id", "priority", "coder"):
        assert word in text


def test_truncation_keeps_the_limit_and_says_so():
    assert truncate("abc", 10) == "abc"
    cut = truncate("x" * 60_000, 50_000)
    assert len(cut) <= 50_000 and "truncated" in cut
    tail = truncate("a" * 100 + "END", 60, keep="tail")
    assert tail.endswith("END") and len(tail) <= 60


def test_progress_lines():
    assert PROGRESS.match("progress: 40").group(1) == "40"
    assert PROGRESS.match("PROGRESS: 75% writing tests").group(2) == "writing tests"
    assert PROGRESS.match("no progress here") is None


def _hub(handler) -> Hub:
    return Hub(Config(hub="http://hub.test", token="ntok_x", alias="coder"), transport=httpx.MockTransport(handler))


def test_tool_calls_send_the_token_and_read_the_result_object():
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen["auth"] = request.headers["Authorization"]
        seen["body"] = json.loads(request.content)
        outcome = {"ok": True, "messages": []}
        return httpx.Response(
            200,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "result": {"content": [{"type": "text", "text": json.dumps(outcome)}], "structuredContent": outcome},
            },
        )

    async def call() -> dict:
        hub = _hub(handler)
        try:
            return await hub.call("get_inbox", alias="coder", wait_seconds=None)
        finally:
            await hub.aclose()

    assert anyio.run(call) == {"ok": True, "messages": []}
    assert seen["auth"] == "Bearer ntok_x"
    assert seen["body"]["params"] == {"name": "get_inbox", "arguments": {"alias": "coder"}}


@pytest.mark.parametrize("status", [502, 429])
def test_an_unavailable_or_limiting_hub_is_retryable(status):
    async def call() -> None:
        hub = _hub(lambda request: httpx.Response(status, json={}))
        try:
            await hub.call("get_inbox", alias="coder")
        finally:
            await hub.aclose()

    with pytest.raises(HubUnavailable):
        anyio.run(call)
