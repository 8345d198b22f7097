"""The official MCP Python SDK, unchanged, against a live hub: both protocol eras, a whole task chain,
a refused token, and a long-poll that outlasts the client's read timeout on progress notifications."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest
from mcp import MCPError
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import REQUEST_TIMEOUT

from hub_agents.services import token_create
from tests.helpers.contract import assert_contract_first

pytestmark = pytest.mark.django_db(transaction=True)

ERA = {"auto": "2026-07-28", "legacy": "2025-11-25"}


def connect(url: str, token: str | None, mode: str, timeout: httpx2.Timeout | None = None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = create_mcp_http_client(headers=headers, timeout=timeout)
    return Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    outcome = json.loads(result.content[0].text)
    assert result.structured_content == outcome
    assert result.is_error == (not outcome["ok"]), outcome
    return outcome


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_sdk_client_runs_a_task_chain_from_dispatch_to_chained_reply(live_server, network, mode):
    _, token = token_create(network=network, role="member")

    async def scenario() -> None:
        async with connect(live_server.url, token, mode) as client:
            assert client.session.protocol_version == ERA[mode]
            listed = await client.list_tools()
            assert_contract_first([tool.name for tool in listed.tools])

            await call(client, "report_status", resume_id="r-coder", alias="coder", status="idle")
            parent = await call(client, "send_task", alias="planner", task="ship v2", from_session="operator")
            child = await call(
                client,
                "send_task",
                alias="coder",
                task="write tests",
                from_session="planner",
                parent_task_id=parent["task_id"],
                priority="high",
            )
            assert child["session_status"] == "idle"

            (message,) = (await call(client, "get_inbox", alias="coder"))["messages"]
            assert (message["id"], message["type"], message["priority"]) == (child["task_id"], "task", "high")
            await call(client, "ack_inbox", alias="coder", message_id=message["id"])
            await call(
                client,
                "report_status",
                resume_id="r-coder",
                alias="coder",
                status="working",
                task=child["task_id"],
                progress=50,
            )
            running = await call(client, "get_task", task_id=child["task_id"])
            assert running["task"]["status"] == "running"

            done = await call(
                client,
                "report_completion",
                alias="coder",
                task=child["task_id"],
                result="12 tests, all green",
                artifacts=["tests/test_v2.py"],
                score=9,
            )
            assert done["task_id"] == child["task_id"]
            finished = await call(client, "get_task", task_id=child["task_id"])
            assert [e["to_status"] for e in finished["events"]] == ["delivered", "acked", "running", "replied"]

            (chained,) = (await call(client, "get_inbox", alias="operator"))["messages"]
            assert (chained["type"], chained["content"], chained["task_id"]) == (
                "chained_reply",
                "12 tests, all green",
                parent["task_id"],
            )
            status = await call(client, "get_session_status", alias="coder")
            assert status["session"]["status"] == "idle"
            assert status["recent_completions"][0]["artifacts"] == '["tests/test_v2.py"]'

            refused = await call(client, "cancel_task", task_id=child["task_id"])
            assert refused == {**refused, "ok": False, "cancelled": False, "error": "task is terminal (replied)"}

    anyio.run(scenario)


def test_sdk_client_reports_a_misspelt_argument_instead_of_guessing(live_server, network):
    _, token = token_create(network=network, role="member")

    async def scenario() -> dict[str, Any]:
        async with connect(live_server.url, token, "auto") as client:
            return await call(client, "send_task", alias="coder", task="deploy", priorty="high")

    outcome = anyio.run(scenario)
    assert outcome["ok"] is False
    assert "priorty" in outcome["error"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_sdk_client_reads_a_missing_token_as_unauthorized_not_as_its_own_timeout(live_server, db, mode):
    async def scenario() -> MCPError:
        async with connect(live_server.url, None, mode) as client:
            with pytest.raises(MCPError) as refused:
                await client.call_tool("list_tasks", {})
            return refused.value

    error = anyio.run(scenario)
    assert error.code != REQUEST_TIMEOUT  # the SDK's own code for "the server did not answer in time"
    assert "token" in error.message


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_sdk_client_long_poll_outlasts_its_read_timeout_on_progress_and_gets_the_message(hub_server, agent_http, mode):
    """The SDK's HTTP read timeout (2 s) is far shorter than the wait: the SSE answer's progress
    notifications (every second here) keep the response alive, and the message sent 4 s into
    the wait is the call's result. (The Python SDK does not reset its own request timeout on
    progress, so that one stays at its default; its HTTP read timeout is what a silent wait hits.)"""
    hub = hub_server(env={"COMMHUB_LONG_POLL_PROGRESS_SECONDS": "1"})
    progress: list[tuple[float, float | None]] = []
    sent: dict[str, Any] = {}

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total))
        if value >= 4 and "task_id" not in sent and not sent.get("sending"):
            sent["sending"] = True  # progress callbacks may overlap; send once
            sent.update(await anyio.to_thread.run_sync(agent_http.send_task, hub, "coder", "wake up"))

    async def scenario() -> dict[str, Any]:
        async with connect(hub.url, agent_http.token, mode, timeout=httpx2.Timeout(10, read=2)) as client:
            result = await client.call_tool(
                "get_inbox", {"alias": "coder", "wait_seconds": 30}, progress_callback=on_progress
            )
            assert result.structured_content == json.loads(result.content[0].text)
            return result.structured_content

    outcome = anyio.run(scenario)

    assert [message["id"] for message in outcome["messages"]] == [sent["task_id"]]
    values = [value for value, _ in progress]
    assert len(values) >= 5 and values == sorted(values) and len(set(values)) == len(values), progress
    assert all(29.5 <= total <= 30.5 for _, total in progress), progress  # wait_seconds
