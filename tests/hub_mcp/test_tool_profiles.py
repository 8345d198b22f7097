"""Tool profiles on /mcp (issue 24): tools/list names only the profile's tools and tools/call refuses
the others, saying how to widen; a connection narrows its token's profile (/mcp?tools=), never widens
it. The profiles' sets: each holds the one before it, `contract` is the contract's 17, `all` every tool."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest

from hub_agents.models import ToolProfile
from hub_agents.services import token_create
from hub_tools import profiles
from hub_tools.tools import CONTRACT_TOOLS, TOOLS
from tests.helpers.contract import POOL_TOOLS, assert_contract_first
from tests.helpers.mcp import LATEST, MCP, post, request, rpc

pytestmark = pytest.mark.django_db

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


def token(network, profile: str | None = None) -> str:
    return token_create(network=network, name="t", tool_profile=profile)[1]


def answer(client, method: str, params: dict | None = None, *, token=None, tools=None, modern=False) -> dict:
    path = MCP if tools is None else f"{MCP}?tools={tools}"
    if not modern:
        return rpc(client, method, params, version=LATEST, token=token, path=path).json()
    headers = {"Mcp-Method": method}
    if method == "tools/call":
        headers["Mcp-Name"] = params["name"]
    body = request(method, {**(params or {}), "_meta": META})
    return post(client, body, version=MODERN, token=token, headers=headers, path=path).json()


def listed(client, **options: Any) -> list[str]:
    return [tool["name"] for tool in answer(client, "tools/list", **options)["result"]["tools"]]


def test_each_profile_holds_the_one_before_it_from_the_contract_to_every_tool():
    sets = [profiles.tool_names(name) for name in ToolProfile.values]

    assert sets[0] == set(CONTRACT_TOOLS)
    assert sets[-1] == {tool.name for tool in TOOLS}
    assert all(narrow < wide for narrow, wide in pairwise(sets))
    assert set(POOL_TOOLS) | {"ask_operator"} <= profiles.tool_names("agent")
    assert {"decide_approval", "answer_question", "search"} <= profiles.tool_names("lead") - profiles.tool_names(
        "agent"
    )


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "modern"])
@pytest.mark.parametrize("profile", ToolProfile.values)
def test_tools_list_names_the_tokens_profile(client, network, profile, modern):
    names = listed(client, token=token(network, profile), modern=modern)

    assert set(names) == profiles.tool_names(profile)
    assert_contract_first(names)


def test_a_token_made_without_a_profile_lists_every_tool(client, network):
    assert listed(client, token=token(network)) == [tool.name for tool in TOOLS]


@pytest.mark.parametrize(
    ("held", "asked", "gets"),
    [
        ("all", "agent", "agent"),
        ("lead", "contract", "contract"),
        ("agent", "all", "agent"),
        ("agent", "lead", "agent"),
    ],
)
def test_a_connection_narrows_its_tokens_profile_and_never_widens_it(client, network, held, asked, gets):
    assert set(listed(client, token=token(network, held), tools=asked)) == profiles.tool_names(gets)


def test_without_a_token_the_url_alone_narrows_the_list(client):
    assert set(listed(client, tools="contract")) == set(CONTRACT_TOOLS)
    assert len(listed(client)) == len(TOOLS)


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "modern"])
def test_a_tool_outside_the_tokens_profile_is_refused_saying_how_to_widen(client, network, modern):
    body = answer(
        client, "tools/call", {"name": "channel_list", "arguments": {}}, token=token(network, "agent"), modern=modern
    )

    assert body["error"]["code"] == -32602
    message = body["error"]["message"]
    assert "'channel_list'" in message and "'agent'" in message
    assert "create_token --profile all" in message
    assert body["error"]["data"] == {"tool": "channel_list", "profile": "agent", "token_profile": "agent"}


def test_a_tool_outside_the_connections_profile_is_refused_naming_the_tokens(client, network):
    body = answer(
        client, "tools/call", {"name": "find_agents", "arguments": {}}, token=token(network, "lead"), tools="contract"
    )

    message = body["error"]["message"]
    assert "'contract'" in message and "/mcp?tools=lead" in message


def test_a_tool_inside_the_profile_runs(client, network):
    raw = token(network, "contract")
    call = {"name": "send_task", "arguments": {"alias": "coder", "task": "x"}}

    body = answer(client, "tools/call", call, token=raw, tools="contract")

    assert body["result"]["structuredContent"]["ok"] is True


def test_an_unknown_profile_in_the_url_is_refused(client, network):
    body = answer(client, "tools/list", token=token(network), tools="everything")

    assert body["error"]["code"] == -32602
    assert "'everything'" in body["error"]["message"] and "contract, agent, lead, all" in body["error"]["message"]


def test_a_tool_list_that_depends_on_a_token_is_cached_privately(client, network):
    with_token = answer(client, "tools/list", token=token(network, "agent"), modern=True)["result"]
    anonymous = answer(client, "tools/list", modern=True)["result"]

    assert (with_token["cacheScope"], anonymous["cacheScope"]) == ("private", "public")
