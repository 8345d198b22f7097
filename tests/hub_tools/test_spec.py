"""One spec per tool: a limit changed at its single definition reaches the MCP inputSchema, the
OpenAPI schema and the argument check alike; descriptions and enums follow settings and tables."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator

from hub_api.endpoints import Operation, route
from hub_core import validate
from hub_tasks import limits
from hub_tasks.models import TRANSITIONS, Move
from hub_tools import tools
from tests.helpers import refused
from tests.helpers.contract import EXTENSION_TOOLS, assert_contract_first

MCP_VERSION = "2025-06-18"


@pytest.fixture
def respecified(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """A monkeypatch for limits; every spec is rebuilt from the real limits afterwards."""
    try:
        with monkeypatch.context() as patch:
            yield patch
    finally:
        tools.rebuild()


def openapi(*operations: tuple[str, Operation]) -> dict[str, Any]:
    """The OpenAPI document hub_api derives from the specs as they are now."""
    patterns = [route(url, operation, tag="spec") for url, operation in operations]
    return SchemaGenerator(patterns=patterns).get_schema(request=None, public=True)


def test_the_text_limit_reaches_the_mcp_schema_openapi_and_the_check(respecified, agent):
    respecified.setattr(validate, "TEXT_MAX", 12)
    tools.rebuild()
    send_task = tools.TOOLS_BY_NAME["send_task"]

    mcp = send_task.definition(MCP_VERSION)["inputSchema"]["properties"]
    document = openapi(("tasks", Operation("post", "send_task", created=True)))
    body = document["paths"]["/tasks"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    too_long = refused(send_task.run, agent, {"alias": "coder", "task": "x" * 13})

    assert mcp["task"]["maxLength"] == mcp["context"]["maxLength"] == 12
    assert body["properties"]["task"]["maxLength"] == body["properties"]["context"]["maxLength"] == 12
    assert (too_long.code, too_long.extra["field"]) == ("invalid_argument", "task")
    assert "is longer than 12 characters (13)" in too_long.message
    assert send_task.run(agent, {"alias": "coder", "task": "x" * 12})["ok"] is True


def test_the_wait_limit_reaches_the_mcp_schema_openapi_and_the_check(respecified, agent):
    respecified.setattr(limits, "WAIT_SECONDS_MAX", 5)
    tools.rebuild()
    get_inbox = tools.TOOLS_BY_NAME["get_inbox"]

    mcp = get_inbox.definition(MCP_VERSION)["inputSchema"]["properties"]["wait_seconds"]
    document = openapi(("sessions/<str:alias>/inbox", Operation("get", "get_inbox")))
    parameters = document["paths"]["/sessions/{alias}/inbox"]["get"]["parameters"]
    (query,) = [parameter for parameter in parameters if parameter["name"] == "wait_seconds"]
    too_long = refused(get_inbox.run, agent, {"alias": "coder", "wait_seconds": 6})

    assert mcp["maximum"] == query["schema"]["maximum"] == 5
    assert (too_long.code, too_long.extra["field"]) == ("invalid_argument", "wait_seconds")
    assert "between 0 and 5 (got 6)" in too_long.message


def test_descriptions_follow_the_offline_threshold(settings):
    def offline_texts() -> list[str]:
        status = tools.TOOLS_BY_NAME["get_all_status"].definition(MCP_VERSION)
        return [
            tools.TOOLS_BY_NAME["report_status"].description,
            status["description"],
            status["inputSchema"]["properties"]["filter_status"]["description"],
        ]

    assert all("10 minutes" in text for text in offline_texts())
    settings.COMMHUB_OFFLINE_AFTER_SECONDS = 90
    assert all("90 seconds" in text and "10 minutes" not in text for text in offline_texts())


def test_reply_outcomes_come_from_the_transitions_table(respecified, agent):
    def outcomes() -> list[str]:
        send_reply = tools.TOOLS_BY_NAME["send_reply"].definition(MCP_VERSION)
        return send_reply["inputSchema"]["properties"]["status"]["enum"]

    assert outcomes() == ["replied", "failed", "cancelled"]
    assert "`status` (replied, failed or cancelled)" in tools.TOOLS_BY_NAME["send_reply"].description
    sources, targets = TRANSITIONS[Move.REPLY]
    respecified.setitem(TRANSITIONS, Move.REPLY, (sources, targets - {"cancelled"}))
    tools.rebuild()
    cancelled = refused(
        tools.TOOLS_BY_NAME["send_reply"].run, agent, {"alias": "a", "text": "t", "status": "cancelled"}
    )

    assert outcomes() == ["replied", "failed"]
    assert "`status` (replied or failed)" in tools.TOOLS_BY_NAME["send_reply"].description
    assert (cancelled.code, cancelled.extra["field"]) == ("invalid_argument", "status")


def test_the_registry_starts_with_the_contracts_17_tools_in_order_then_named_extensions():
    """CONTRACT_TOOLS is the one statement of the contract's tools; the registry, and with it every
    tools/list and the REST routes, lists them first, unchanged, whatever it adds after them."""
    assert len(tools.CONTRACT_TOOLS) == len(set(tools.CONTRACT_TOOLS)) == 17
    assert tools.CONTRACT_TOOLS[0] == "report_status" and tools.CONTRACT_TOOLS[-1] == "broadcast"
    assert_contract_first([tool.name for tool in tools.TOOLS])
    assert set(EXTENSION_TOOLS) <= set(tools.TOOLS_BY_NAME)


UNIQUE_LISTS = [
    (tool.name, name) for tool in tools.TOOLS for name, param in tool.params.items() if param.schema.get("uniqueItems")
]


@pytest.mark.parametrize(("tool", "name"), UNIQUE_LISTS, ids=[f"{tool}.{name}" for tool, name in UNIQUE_LISTS])
def test_a_list_the_schema_says_is_unique_is_refused_with_a_repeat(tool, name):
    """What the published schema promises (uniqueItems), the parser holds: a repeated item is
    invalid_argument (400) before any service runs, not accepted (schemathesis found ask_operator's
    options taking ["0", "0"])."""
    assert {"ask_operator", "send_task", "channel_create"} <= {tool for tool, _ in UNIQUE_LISTS}  # not vacuous
    param = tools.TOOLS_BY_NAME[tool].params[name]

    assert param.parse(name, ["ab", "cd"]) == ["ab", "cd"]
    repeated = refused(param.parse, name, ["ab", "cd", "ab"])
    assert (repeated.code, repeated.extra["field"]) == ("invalid_argument", name)
    assert "twice" in repeated.message
