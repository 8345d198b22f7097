"""The MCP catalogue is compact and loses no limit (issue 24): tools/list leaves out only what the
server instructions say once (the no-NUL / not-blank text patterns, the refusal fields of every result,
the description of an argument many tools share); every other limit of every argument is there as the
spec states it, the OpenAPI schema keeps them all, and each profile's list stays under its byte ceiling."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from hub_core.validate import NO_NUL, NOT_BLANK, STRING_ARRAY_JSON
from hub_mcp.handlers import INSTRUCTIONS
from hub_tools.args import SAID_ONCE
from hub_tools.tools import TOOLS_BY_NAME
from tests.helpers.mcp import LATEST, MCP, post, request, rpc

pytestmark = pytest.mark.django_db

MODERN = "2026-07-28"
SAID_ONCE_PATTERNS = {NO_NUL, NOT_BLANK, STRING_ARRAY_JSON}
REFUSAL_FIELDS = {"error", "code", "message", "field", "warning"}
# Bytes of the whole tools/list answer (the HTTP body) per profile. Issue 24 asked for contract 8,000,
# agent 16,000, all 30,000 (the tools/list it measured at 52 KB had no output schemas). Its 97
# arguments' types and limits alone, without any description, take 8.3 KB of the contract's list, so
# these ceilings hold what the compact catalogue measures (bench/catalogue.py prints it), with a little
# room: a tool or a description that grows the list past them has to be argued for here.
# Issue 25 added 1,009 bytes to every profile: report_completion's and send_reply's usage (tokens_in,
# tokens_out, cost_usd, model), the idempotency_key of four agent tools (described once, in the
# instructions) and send_task's budget_usd and budget_tokens. Its report_node (a node's own heartbeat,
# in `agent` and so in `lead` and `all`) adds 1,877 bytes (1,995 with titles and output schemas): most
# of it the limits of each agent and runtime object it lists; list_nodes (`all` only) adds 357 (498).
# Issue 28's six schedule tools add 5,149 bytes to `all` (6,055): schedule_create alone 2,454 (2,573),
# a send_task template with its when and its rules; schedule_list, in `lead` too, fits its room there.
# Issue 28's node_command_ack, in `agent` (a node answers the commands it is sent over MCP, with the
# token its report_node uses), takes `agent` and `lead` to what they list now.
# Issue 28's three cap tools (`all` only) add 1,814 bytes (2,142): cap_set's description says what each
# scope counts and what waits.
# Issue 28's three budget tools (`all` only) add 2,036 bytes (2,443): budget_set's description says
# what is counted, what the 80 % and 100 % marks do and what waits.
CEILINGS = {
    "2025-03-26": {"contract": 19_009, "agent": 24_998, "lead": 29_252, "all": 47_100},
    MODERN: {"contract": 22_609, "agent": 29_691, "lead": 34_902, "all": 57_400},
}


def tools_list(client: Client, version: str, profile: str | None = None) -> Any:
    path = MCP if profile is None else f"{MCP}?tools={profile}"
    if version != MODERN:
        return rpc(client, "tools/list", version=version, path=path)
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    body = request("tools/list", {"_meta": meta})
    return post(client, body, version=MODERN, headers={"Mcp-Method": "tools/list"}, path=path)


def listed(client: Client, version: str = LATEST) -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool for tool in tools_list(client, version).json()["result"]["tools"]}


@pytest.mark.parametrize("version", list(CEILINGS))
@pytest.mark.parametrize("profile", ["contract", "agent", "lead", "all"])
def test_each_profiles_tool_list_stays_under_its_byte_ceiling(client, version, profile):
    reply = tools_list(client, version, profile)

    assert reply.status_code == 200
    assert len(reply.content) <= CEILINGS[version][profile], len(reply.content)


def test_the_tool_list_is_compact_json(client):
    body = tools_list(client, LATEST).content

    assert body.decode() == json.dumps(json.loads(body), separators=(",", ":"))  # no space after a separator


def test_every_limit_of_every_argument_is_published_but_what_the_instructions_say_once(client):
    for name, tool in listed(client).items():
        properties = tool["inputSchema"]["properties"]
        assert set(properties) == set(TOOLS_BY_NAME[name].params), name
        for argument, param in TOOLS_BY_NAME[name].params.items():
            published, spec = properties[argument], param.schema
            said_once = {"description"} if param.said_once else set()
            if spec.get("pattern") in SAID_ONCE_PATTERNS:
                said_once.add("pattern")
            kept = {key: value for key, value in spec.items() if key not in said_once | {"items"}}
            assert {key: published.get(key) for key in kept} == kept, (name, argument)
            assert not said_once & set(published), (name, argument)
            if "items" in spec:
                assert published["items"] == bare(spec["items"]), (name, argument)


def bare(schema: dict[str, Any]) -> dict[str, Any]:
    """An array's items as tools/list publishes them: no description, no pattern said once, and the
    same for each field of an object item (report_node's agents), every other limit kept."""
    kept = {k: v for k, v in schema.items() if k != "description" and not (k == "pattern" and v in SAID_ONCE_PATTERNS)}
    if "properties" in kept:
        kept["properties"] = {field: bare(inner) for field, inner in kept["properties"].items()}
    return kept


def test_what_tools_list_leaves_out_the_instructions_say_once(client):
    tools = listed(client)
    patterns = {json.dumps(p) for t in tools.values() for p in t["inputSchema"]["properties"].values()}

    assert not any(pattern in text for pattern in SAID_ONCE_PATTERNS for text in patterns)
    assert "never hold NUL" in INSTRUCTIONS and "must not be blank" in INSTRUCTIONS
    assert "unknown argument is refused" in INSTRUCTIONS
    for field in ("ok", *REFUSAL_FIELDS):
        assert f'"{field}"' in INSTRUCTIONS, field
    for argument, param in SAID_ONCE.items():
        assert f"{argument}: {param.schema['description'][:20].lower()}" in INSTRUCTIONS.lower(), argument
        shared = [name for name in tools if TOOLS_BY_NAME[name].params.get(argument) is param]
        assert shared and all(
            "description" not in tools[name]["inputSchema"]["properties"][argument] for name in shared
        )


def test_output_schemas_keep_each_tools_own_fields_and_types(client):
    for name, tool in listed(client).items():
        published = tool["outputSchema"]
        spec = TOOLS_BY_NAME[name].output
        own = set(spec["properties"]) - REFUSAL_FIELDS
        assert set(published["properties"]) == own, name
        assert published["required"] == ["ok"], name
        for field in own:
            assert published["properties"][field].get("type") == spec["properties"][field].get("type"), (name, field)


def test_a_pattern_tools_list_leaves_out_the_openapi_schema_keeps(client):
    send_task = listed(client)["send_task"]["inputSchema"]["properties"]
    document = client.get("/api/v1/schema", {"format": "json"}).json()
    body = document["paths"]["/api/v1/tasks"]["post"]["requestBody"]["content"]["application/json"]["schema"]

    assert "pattern" not in send_task["task"] and "pattern" not in send_task["context"]
    assert "description" not in send_task["alias"]
    assert body["properties"]["task"]["pattern"] == NOT_BLANK
    assert body["properties"]["context"]["pattern"] == NO_NUL
    assert body["properties"]["alias"]["description"] == SAID_ONCE["alias"].schema["description"]
