"""What each MCP method answers, in either era."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hub_agents.actors import Actor
from hub_agents.models import ToolProfile
from hub_mcp.protocol import (
    HANDSHAKE_VERSIONS,
    INVALID_PARAMS,
    LATEST_HANDSHAKE,
    METHOD_NOT_FOUND,
    MODERN_VERSIONS,
    SERVER_INFO_META,
    Exchange,
    RpcError,
)
from hub_tools import profiles
from hub_tools.args import SAID_ONCE as SAID_ONCE_ARGUMENTS
from hub_tools.profiles import NAMES as PROFILE_NAMES
from hub_tools.schema import SAID_ONCE
from hub_tools.tool import Tool
from hub_tools.tools import TOOLS, TOOLS_BY_NAME

SERVER_INFO = {"name": "commhub", "title": "CommHub", "version": "0.1.0"}
# Each tool named here is written as a call with its real arguments (tests/hub_mcp/test_instructions.py
# checks them against the specs): an agent that follows the text word for word is never refused.
_GUIDE = (
    "CommHub coordinates a fleet of AI agents. As an agent: call report_status(resume_id, alias, status) about "
    "every 3 minutes (it is your heartbeat); poll get_inbox(alias, wait_seconds=30) and ack_inbox(alias, "
    'message_id) each message you take; while you work, report_status(resume_id, alias, status="working", '
    "task=<its task_id>); when done, report_completion(alias, task=<its task_id>, result). To delegate: "
    "send_task(alias, task, from_session=<your own alias>), then follow it with get_task(task_id) or "
    "list_tasks(alias). from_session is how a sender gets its replies: the result, replies and notices about "
    'the task go to that alias\'s inbox; without it the sender is "hub" and they reach no agent. '
    "send_message(from_session) and send_reply(from_session) take it too."
)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


# What tools/list leaves out of every tool (hub_tools.schema.compact_input), said here once.
_SHARED = (
    "Arguments many tools share: "
    + "; ".join(
        f"{name}: {_lower_first(param.schema['description'].rstrip('.'))}"
        for name, param in SAID_ONCE_ARGUMENTS.items()
    )
    + "."
)
_PROFILES = (
    f"tools/list names the tools of this connection's profile ({', '.join(PROFILE_NAMES)}): its token's, or a "
    "narrower one asked for with /mcp?tools=NAME."
)
INSTRUCTIONS = f"{_GUIDE} {_SHARED} {SAID_ONCE} {_PROFILES}"
CAPABILITIES = {"tools": {"listChanged": False}}
# How long a client may cache the tool list or discovery answer. Discovery is the same for every
# caller; the tool list depends on the token's profile, so it is cached per caller once one is sent.
CACHE_HINT = {"ttlMs": 300_000, "cacheScope": "public"}
PRIVATE_CACHE_HINT = {**CACHE_HINT, "cacheScope": "private"}

Handler = Callable[[dict[str, Any], Exchange, Actor | None], dict[str, Any]]


def initialize(params: dict[str, Any], exchange: Exchange, actor: Actor | None) -> dict[str, Any]:
    requested = params.get("protocolVersion")
    return {
        "protocolVersion": requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE,
        "capabilities": CAPABILITIES,
        "serverInfo": SERVER_INFO,
        "instructions": INSTRUCTIONS,
    }


def ping(params: dict[str, Any], exchange: Exchange, actor: Actor | None) -> dict[str, Any]:
    return {}


def discover(params: dict[str, Any], exchange: Exchange, actor: Actor | None) -> dict[str, Any]:
    return {
        "supportedVersions": list(MODERN_VERSIONS),
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS,
        **CACHE_HINT,
    }


def _profile(exchange: Exchange, actor: Actor | None) -> tuple[str, frozenset[str]]:
    """The connection's tool profile and its tools: the token's, narrowed by /mcp?tools= if asked."""
    if exchange.tools is not None and exchange.tools not in PROFILE_NAMES:
        raise RpcError(
            INVALID_PARAMS,
            f"Unknown tool profile {exchange.tools!r} in /mcp?tools=: one of {', '.join(PROFILE_NAMES)}.",
        )
    held = actor.tool_profile if actor is not None else ToolProfile.ALL
    name = profiles.narrowed(held, exchange.tools)
    return name, profiles.tool_names(name)


def tools_list(params: dict[str, Any], exchange: Exchange, actor: Actor | None) -> dict[str, Any]:
    _, listed = _profile(exchange, actor)
    tools = [tool.definition(exchange.version) for tool in TOOLS if tool.name in listed]
    result: dict[str, Any] = {"tools": tools}
    if exchange.modern:
        result |= CACHE_HINT if actor is None else PRIVATE_CACHE_HINT
    return result


def callable_tool(name: object, exchange: Exchange, actor: Actor) -> Tool:
    """The tool a tools/call names, if this connection's profile holds it; else a protocol fault
    saying how to widen the profile (an unknown tool and one outside the profile alike)."""
    tool = TOOLS_BY_NAME.get(name) if isinstance(name, str) else None
    profile, listed = _profile(exchange, actor)
    if tool is None:
        raise RpcError(INVALID_PARAMS, f"Unknown tool: {name!r}. tools/list names the {len(listed)} tools.")
    if tool.name not in listed:
        if profile == actor.tool_profile:
            widen = (
                f"it is your token's profile: an operator can make a token with a wider one "
                f"(manage.py create_token --profile {_narrowest_holding(tool.name)} or wider)"
            )
        else:
            widen = f"your token's profile is {actor.tool_profile}: connect to /mcp?tools={actor.tool_profile}"
        raise RpcError(
            INVALID_PARAMS,
            f"Tool {tool.name!r} is not in this connection's tool profile {profile!r} ({len(listed)} tools, "
            f"named by tools/list); {widen}.",
            data={"tool": tool.name, "profile": profile, "token_profile": actor.tool_profile},
        )
    return tool


def _narrowest_holding(tool: str) -> str:
    """The narrowest profile that holds the tool."""
    return next(name for name in PROFILE_NAMES if tool in profiles.tool_names(name))


def tools_call(params: dict[str, Any], exchange: Exchange, actor: Actor | None) -> dict[str, Any]:
    assert actor is not None, "the endpoint authenticates every tools/call"
    tool = callable_tool(params.get("name"), exchange, actor)
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, "tools/call arguments must be an object.")
    return tool_payload(tool.call(actor, arguments), exchange)


def tool_payload(outcome: dict[str, Any], exchange: Exchange) -> dict[str, Any]:
    """A tool's result object as tools/call answers it in the exchange's version."""
    payload: dict[str, Any] = {
        "content": [{"type": "text", "text": json.dumps(outcome, ensure_ascii=False)}],
        "isError": not outcome.get("ok", False),
    }
    if exchange.version >= "2025-06-18":
        payload["structuredContent"] = outcome
    return payload


HANDSHAKE_METHODS: dict[str, Handler] = {
    "initialize": initialize,
    "ping": ping,
    "tools/list": tools_list,
    "tools/call": tools_call,
}
MODERN_METHODS: dict[str, Handler] = {
    "server/discover": discover,
    "tools/list": tools_list,
    "tools/call": tools_call,
}


def answer(method: str, params: dict[str, Any], exchange: Exchange, actor: Actor | None) -> dict[str, Any]:
    """The result of one request, stamped as its era requires; RpcError for a protocol fault."""
    handler = (MODERN_METHODS if exchange.modern else HANDSHAKE_METHODS).get(method)
    if handler is None:
        era = f"protocol {exchange.version}"
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method!r} is not served in {era}.")
    return stamped(handler(params, exchange, actor), exchange)


def stamped(result: dict[str, Any], exchange: Exchange) -> dict[str, Any]:
    """A method's result as its era sends it."""
    if exchange.modern:
        result = {**result, "resultType": "complete", "_meta": {SERVER_INFO_META: SERVER_INFO}}
    return result
