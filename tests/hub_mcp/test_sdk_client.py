"""The official MCP Python SDK, unchanged, against a live hub: both protocol eras, a whole task chain."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from hub_agents.services import token_create

pytestmark = pytest.mark.django_db(transaction=True)

ERA = {"auto": "2026-07-28", "legacy": "2025-11-25"}


def connect(url: str, token: str, mode: str) -> Client:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
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
            assert len(listed.tools) == 17

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
