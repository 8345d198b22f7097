"""report_node and list_nodes over /mcp (issue 25 item 7): listed in the `agent` profile (report_node)
and `all` (both), never in `contract`; the call answers the contract's result object, a bad argument
is refused as every tool refuses it, and a viewer's token writes nothing."""

from __future__ import annotations

import pytest

from hub_agents.models import AgentSession, Node
from hub_agents.services import token_create
from tests.helpers.mcp import LATEST, call, rpc

pytestmark = pytest.mark.django_db

REPORT = {
    "node_id": "box-1",
    "node_name": "build box 1",
    "host": "box1.lan",
    "os": "Linux 6.8 x86_64",
    "agent_version": "0.9.0",
    "runtimes": [{"name": "claude", "version": "2.1.3"}],
    "agents": [{"alias": "builder", "runtime": "claude", "concurrency": 2, "running": 1}],
    "slots_total": 2,
    "slots_used": 1,
}


def token(network, role: str = "member", profile: str | None = None) -> str:
    return token_create(network=network, role=role, name=role, tool_profile=profile)[1]


def tools(client, raw: str) -> dict[str, dict]:
    listed = rpc(client, "tools/list", version=LATEST, token=raw).json()["result"]["tools"]
    return {tool["name"]: tool for tool in listed}


def test_the_agent_profile_lists_report_node_and_the_contract_profile_does_not(client, network):
    agent, contract, everything = (tools(client, token(network, profile=p)) for p in ("agent", "contract", "all"))

    assert "report_node" in agent and "list_nodes" not in agent
    assert not {"report_node", "list_nodes"} & set(contract)
    assert {"report_node", "list_nodes"} <= set(everything)
    schema = agent["report_node"]["inputSchema"]
    assert schema["required"] == ["node_id"]
    item = schema["properties"]["agents"]["items"]
    assert item["required"] == ["alias", "runtime", "concurrency", "running"]
    assert item["additionalProperties"] is False and schema["properties"]["agents"]["maxItems"] == 500
    assert item["properties"]["concurrency"] == {"type": "integer", "minimum": 1, "maximum": 100}
    assert schema["properties"]["runtimes"]["maxItems"] == 20
    assert agent["report_node"]["annotations"]["readOnlyHint"] is False


def test_a_node_reports_and_lists_itself(client, network):
    raw = token(network)
    call(client, "report_status", {"resume_id": "r-builder", "alias": "builder", "status": "idle"}, token=raw)

    reported = call(client, "report_node", REPORT, token=raw)
    listed = call(client, "list_nodes", {}, token=token(network, "viewer"))["structuredContent"]

    assert reported["structuredContent"] == {"ok": True, "node_id": "box-1"} and reported["isError"] is False
    [row] = listed["nodes"]
    assert (row["host"], row["slots_used"], row["slots_free"], row["agents"]) == ("box1.lan", 1, 1, REPORT["agents"])
    assert AgentSession.objects.get(alias="builder").node_id == "box-1"


def test_a_bad_argument_is_refused_as_every_tool_refuses_one(client, network):
    bad = {**REPORT, "agents": [{**REPORT["agents"][0], "concurrency": "two"}]}

    result = call(client, "report_node", bad, token=token(network))

    assert result["isError"] is True
    body = result["structuredContent"]
    assert (body["ok"], body["code"], body["field"]) == (False, "invalid_argument", "agents[0].concurrency")
    assert not Node.objects.exists()


def test_a_viewer_token_writes_nothing(client, network):
    result = call(client, "report_node", REPORT, token=token(network, "viewer"))

    body = result["structuredContent"]
    assert (body["ok"], body["code"]) == (False, "permission_denied")
    assert "viewer" in body["message"] and not Node.objects.exists()
