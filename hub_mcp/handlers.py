"""What each MCP method answers, in either era."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hub_agents.actors import Actor
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
from hub_tools.tools import TOOLS, TOOLS_BY_NAME

SERVER_INFO = {"name": "commhub", "title": "CommHub", "version": "0.1.0"}
INSTRUCTIONS = (
    "CommHub coordinates a fleet of AI agents. As an agent: call report_status about every 3 minutes "
    "(it is your heartbeat), poll get_inbox, ack_inbox each message you take, report_status working "
    "with the task_id while you work, and report_completion with the task_id when done. To delegate: "
    "send_task, then follow it with get_task or list_tasks. Every tool answers a JSON object whose "
    '"ok" says whether it worked; on false, "error" says why and "message" what to do next.'
)
CAPABILITIES = {"tools": {"listChanged": False}}
# How long a client may cache the tool list or discovery answer: the same for every caller.
CACHE_HINT = {"ttlMs": 300_000, "cacheScope": "public"}

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


def tools_list(params: dict[str, Any], exchange: Exchange, actor: Actor | None) -> dict[str, Any]:
    result: dict[str, Any] = {"tools": [tool.definition(exchange.version) for tool in TOOLS]}
    if exchange.modern:
        result |= CACHE_HINT
    return result


def tools_call(params: dict[str, Any], exchange: Exchange, actor: Actor | None) -> dict[str, Any]:
    name = params.get("name")
    tool = TOOLS_BY_NAME.get(name) if isinstance(name, str) else None
    if tool is None:
        raise RpcError(INVALID_PARAMS, f"Unknown tool: {name!r}. tools/list names the {len(TOOLS)} tools.")
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, "tools/call arguments must be an object.")
    assert actor is not None, "the endpoint authenticates every tools/call"
    outcome = tool.call(actor, arguments)
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
    result = handler(params, exchange, actor)
    if exchange.modern:
        result = {**result, "resultType": "complete", "_meta": {SERVER_INFO_META: SERVER_INFO}}
    return result
