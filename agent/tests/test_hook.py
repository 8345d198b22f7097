"""The Stop hook's two decisions, on the input Claude Code sends, with a stand-in hub."""

from __future__ import annotations

import functools
import io
import json

import anyio
import httpx
from commhub_agent.hook import decide, read_hook_input
from commhub_agent.hub import Config

CONFIG = Config(hub="http://hub.test", token="ntok_x", alias="coder")
HOOK_INPUT = {
    "session_id": "abc123",
    "transcript_path": "/home/dev/.claude/projects/repo/abc123.jsonl",
    "cwd": "/work/repo",
    "permission_mode": "default",
    "hook_event_name": "Stop",
    "stop_hook_active": False,
}


def inbox_of(*messages: dict) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        outcome = {"ok": True, "messages": list(messages)}
        result = {"content": [{"type": "text", "text": json.dumps(outcome)}], "structuredContent": outcome}
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": result})

    return httpx.MockTransport(handler)


TASK = {"id": "m1", "type": "task", "priority": "high", "content": "fix it", "from_session": "lead", "task_id": "t1"}
NOTE = {"id": "m2", "type": "message", "priority": "normal", "content": "fyi", "from_session": "lead", "task_id": None}


def test_the_hook_input_is_read_from_stdin():
    assert read_hook_input(io.StringIO(json.dumps(HOOK_INPUT)))["hook_event_name"] == "Stop"
    assert read_hook_input(io.StringIO("not json")) == {}


def test_pending_tasks_block_the_stop_once(tmp_path):
    answer = anyio.run(functools.partial(decide, CONFIG, HOOK_INPUT, tmp_path, transport=inbox_of(TASK, NOTE)))
    assert answer["decision"] == "block"
    assert "task_id=t1" in answer["reason"] and "fix it" in answer["reason"]
    assert "m2" not in answer["reason"]  # a plain message is no work
    again = anyio.run(
        functools.partial(decide, CONFIG, {**HOOK_INPUT, "stop_hook_active": True}, tmp_path, transport=inbox_of(TASK))
    )
    assert again is None


def test_nothing_pending_lets_the_session_stop(tmp_path):
    assert anyio.run(functools.partial(decide, CONFIG, HOOK_INPUT, tmp_path, transport=inbox_of(NOTE))) is None


def test_an_unreachable_hub_lets_the_session_stop(tmp_path):
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    assert (
        anyio.run(functools.partial(decide, CONFIG, HOOK_INPUT, tmp_path, transport=httpx.MockTransport(down))) is None
    )
