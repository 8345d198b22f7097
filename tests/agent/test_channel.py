"""`commhub-agent channel` spawned over stdio by the official MCP client, against a live hub."""

from __future__ import annotations

import collections
import json
import os
import signal
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp.client.extension import ClientExtension, NotificationBinding
from mcp.client.stdio import StdioServerParameters
from pydantic import BaseModel

from hub_tools.tools import TOOLS
from tests.helpers.contract import assert_contract_first
from tests.helpers.live import companion_env, rest, restart_hub

pytestmark = pytest.mark.django_db(transaction=True)

ALIAS = "claude-1"


class ChannelParams(BaseModel):
    content: str
    meta: dict[str, str]


class Inbox(ClientExtension):
    """Collects the channel's pushes, as Claude Code would receive them."""

    identifier = "io.commhub.test/channel"

    def __init__(self) -> None:
        self.received: list[ChannelParams] = []

    def notifications(self) -> list[NotificationBinding[Any]]:
        return [
            NotificationBinding(method="notifications/claude/channel", params_type=ChannelParams, handler=self._on_push)
        ]

    async def _on_push(self, params: ChannelParams) -> None:
        self.received.append(params)


def _channel_pids() -> set[int]:
    """The channel processes this test started (children of the SDK's stdio transport)."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and b"commhub_agent" in cmdline and b"channel" in cmdline:
            pids.add(int(entry.name))
    return pids


@asynccontextmanager
async def channel(env: dict[str, str], inbox: Inbox) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=env["PYTHON"], args=["-m", "commhub_agent", "channel", "--alias", ALIAS, "--heartbeat", "5"], env=env
    )
    # mode="legacy": the initialize handshake, as Claude Code connects to its MCP servers.
    async with Client(params, mode="legacy", extensions=[inbox]) as client:
        yield client


async def until(condition: Any, within: float, what: str) -> None:
    with anyio.fail_after(within):
        while not condition():
            await anyio.sleep(0.05)
    assert condition(), what


async def follows_the_feed(inbox: Inbox, probe: Any, within: float = 30) -> set[str]:
    """Send probe messages, one every 2 s, until one is pushed; the ids of those sent."""
    sent: set[str] = set()
    with anyio.fail_after(within):
        while not inbox.received:
            sent.add((await anyio.to_thread.run_sync(probe))["message_id"])
            with anyio.move_on_after(2):
                await until(lambda: bool(inbox.received), within, "a probe message")
    return sent


def task_ids(inbox: Inbox) -> list[str]:
    return [p.meta["task_id"] for p in inbox.received if p.meta["event"] == "new_task"]


def test_channel_delivers_every_task_once_across_a_sigkill_and_a_hub_restart(live_hub, dispatcher, worker, state_dir):
    import sys

    env = {**companion_env(live_hub, worker, state_dir), "PYTHON": sys.executable}
    sent: list[dict[str, Any]] = []

    def send(count: int, pause: float, start: int = 0) -> None:
        for n in range(start, start + count):
            body = {"alias": ALIAS, "task": f"task number {n}", "from_session": "planner"}
            body["priority"] = ("high", "normal", "low")[n % 3]
            reply = rest(live_hub, dispatcher, "POST", "/tasks", json=body)
            assert reply["ok"], reply
            sent.append({**body, "task_id": reply["task_id"]})
            time.sleep(pause)

    async def scenario() -> None:
        first, second = Inbox(), Inbox()
        async with channel(env, first) as client:
            caps = client.server_capabilities
            assert caps.experimental == {"claude/channel": {}}
            assert "ack_inbox" in client.instructions and "report_completion" in client.instructions
            assert ALIAS in client.instructions
            # A channel started without a saved position follows the feed from its first connection
            # on; a message sent before that connection is in the inbox, not pushed. So: probe until
            # the channel follows the feed (a busy machine may connect it after the handshake).
            # From then on nothing is missed.
            probes = await follows_the_feed(
                first,
                lambda: rest(live_hub, dispatcher, "POST", "/messages", json={"alias": ALIAS, "message": "hello"}),
            )
            hello = first.received[0]
            assert hello.content == "hello"
            assert hello.meta["event"] == "new_message" and hello.meta["message_id"] in probes

            sender = threading.Thread(target=send, args=(50, 0.04))
            sender.start()
            await until(lambda: len(task_ids(first)) >= 15, 60, "15 tasks before the kill")
            (pid,) = _channel_pids()
            os.kill(pid, signal.SIGKILL)  # mid-stream: the sender is still sending
            await anyio.sleep(1)  # what was on the pipe before the kill is still read
        assert len(task_ids(first)) < 50, "the kill should land mid-stream"

        async with channel(env, second) as client:
            await anyio.to_thread.run_sync(sender.join)
            await until(lambda: len(task_ids(first)) + len(task_ids(second)) >= 50, 60, "all 50 tasks")
            await anyio.sleep(1)  # anything extra (a duplicate) would come now
            seen = collections.Counter(task_ids(first) + task_ids(second))
            assert sorted(seen) == sorted(t["task_id"] for t in sent)
            assert set(seen.values()) == {1}, [t for t, n in seen.items() if n > 1]
            pushes = {p.meta["task_id"]: p for p in first.received + second.received if p.meta["event"] == "new_task"}
            for task in sent:
                push = pushes[task["task_id"]]
                assert push.content == task["task"]
                assert push.meta["from"] == "planner"
                assert push.meta["priority"] == task["priority"]
                assert push.meta["kind"] == "task"
                assert push.meta["message_id"] == task["task_id"]
                assert int(push.meta["event_id"]) > 0

            # The hub goes away and comes back on the same URL: the channel reconnects and continues.
            await anyio.to_thread.run_sync(restart_hub, live_hub)
            await anyio.to_thread.run_sync(send, 5, 0.0, 50)
            await until(
                lambda: {t["task_id"] for t in sent[50:]} <= set(task_ids(second)), 60, "tasks after the restart"
            )
            await anyio.sleep(0.5)
            assert collections.Counter(task_ids(first) + task_ids(second)).most_common(1)[0][1] == 1

            await proxied_tools_answer_as_the_hub_does(client, live_hub, worker, sent[0]["task_id"])
        # The client closed the session: the channel said it went offline.
        status = await anyio.to_thread.run_sync(lambda: worker.mcp(live_hub, "get_session_status", alias=ALIAS))
        assert status["session"]["status"] == "offline"

    anyio.run(scenario)


async def proxied_tools_answer_as_the_hub_does(client: Client, hub: Any, worker: Any, task_id: str) -> None:
    listed = await client.list_tools()
    # The channel proxies the hub's tools/list as it is: the contract's 17 first, then the hub's own
    # (the open pool's find_agents, list_open_tasks, claim_task, ...), none hidden and none added.
    names = [tool.name for tool in listed.tools]
    assert_contract_first(names)
    assert names == [tool.name for tool in TOOLS]
    tools = {tool.name: tool for tool in listed.tools}
    assert "alias" not in tools["get_inbox"].input_schema.get("required", [])
    assert "alias" in tools["send_task"].input_schema["required"]  # there the alias is the addressee

    def direct(tool: str, **arguments: Any) -> dict[str, Any]:
        return worker.mcp(hub, tool, **arguments)

    # The session reported itself (claude-code, its host and cwd) when the channel started.
    proxied = await client.call_tool("get_session_status", {})
    outcome = json.loads(proxied.content[0].text)
    assert outcome == proxied.structured_content
    assert outcome["ok"] and outcome["session"]["agent"] == "claude-code"
    assert outcome["session"]["project_dir"]
    # The same answer as a direct call, but for last_seen_at: the channel's own SSE connection may
    # refresh the session's presence between the two calls.
    again = direct("get_session_status", alias=ALIAS)
    for answer in (outcome, again):
        answer["session"].pop("last_seen_at")
    assert outcome == again

    got = await client.call_tool("get_task", {"task_id": task_id})
    assert json.loads(got.content[0].text) == direct("get_task", task_id=task_id)

    # A refusal comes back as the hub words it, isError and all.
    missing = await client.call_tool("get_task", {"task_id": "no-such-task"})
    assert missing.is_error
    assert json.loads(missing.content[0].text) == direct("get_task", task_id="no-such-task")

    # The alias is filled in: ack one delivery and report progress without naming ourselves.
    acked = await client.call_tool("ack_inbox", {"message_id": task_id})
    assert json.loads(acked.content[0].text) == {"ok": True}
    working = await client.call_tool("report_status", {"status": "working", "task": task_id, "progress": 40})
    assert json.loads(working.content[0].text)["ok"]
    assert direct("get_task", task_id=task_id)["task"]["status"] == "running"
    assert direct("get_session_status", alias=ALIAS)["session"]["progress"] == 40


def test_what_the_model_sends_through_the_channel_is_signed_with_its_alias(live_hub, dispatcher, worker, state_dir):
    # Without from_session a sender is "hub" and the answer goes nowhere useful: the channel fills
    # it with its own alias on the tools that take it, unless the model named someone.
    import sys

    env = {**companion_env(live_hub, worker, state_dir), "PYTHON": sys.executable}

    async def scenario() -> None:
        async with channel(env, Inbox()) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            for name in ("send_task", "send_message", "send_reply", "retry_task", "cancel_task"):
                assert ALIAS in tools[name].input_schema["properties"]["from_session"]["description"], name
            sent = await client.call_tool("send_task", {"alias": "lead", "task": "review my change"})
            task_id = json.loads(sent.content[0].text)["message_id"]
            for tool, arguments in (
                ("send_message", {"alias": "lead", "message": "fyi"}),
                ("send_reply", {"alias": "lead", "text": "done it", "in_reply_to": task_id}),
                ("send_message", {"alias": "lead", "message": "on behalf", "from_session": "planner"}),
            ):
                answer = await client.call_tool(tool, arguments)
                assert json.loads(answer.content[0].text)["ok"], answer

    anyio.run(scenario)
    inbox = rest(live_hub, dispatcher, "GET", "/sessions/lead/inbox", params={"limit": 10})["messages"]
    assert {m["content"]: m["from_session"] for m in inbox if m["type"] != "task"} == {
        "fyi": ALIAS,
        "done it": ALIAS,
        "on behalf": "planner",
    }
    (sent,) = rest(live_hub, dispatcher, "GET", "/tasks", params={"alias": "lead"})["tasks"]
    assert sent["from_name"] == ALIAS
