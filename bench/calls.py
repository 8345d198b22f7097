"""The requests the benchmark makes: MCP tools/call and REST, as real agents make them."""

from __future__ import annotations

import itertools
import random
from typing import Any

import aiohttp

from bench.load import Call, get_json, post_json
from bench.seed import loop_alias

MCP_HEADERS = {"MCP-Protocol-Version": "2025-06-18", "Accept": "application/json, text/event-stream"}
_ids = itertools.count(1)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **MCP_HEADERS}


async def tool(session: aiohttp.ClientSession, url: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """tools/call; the tool's result object ({} on a transport or protocol failure)."""
    body = {
        "jsonrpc": "2.0",
        "id": next(_ids),
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    status, reply = await post_json(session, f"{url}/mcp", body)
    if status != 200 or "result" not in reply:
        return {}
    return reply["result"].get("structuredContent") or {}


async def tool_arguments(session: aiohttp.ClientSession, url: str, name: str) -> set[str]:
    """The arguments tool `name` takes, as the hub lists them (tools/list)."""
    status, reply = await post_json(session, f"{url}/mcp", {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/list"})
    if status != 200 or "result" not in reply:
        raise RuntimeError(f"tools/list answered {status}: {reply}")
    found = next(tool for tool in reply["result"]["tools"] if tool["name"] == name)
    return set(found["inputSchema"].get("properties", {}))


def mcp(url: str, name: str, arguments: Any) -> Call:
    """A call of one tool; `arguments(client)` gives each call's arguments."""

    async def call(session: aiohttp.ClientSession, client: int) -> bool:
        return (await tool(session, url, name, arguments(client))).get("ok") is True

    return call


def acks(url: str, seeded: dict[int, list[str]], clients: int) -> Call:
    """ack_inbox of messages seeded for each client of a cell (bench.seed); one more than were seeded
    fails, so a cell that outruns its seeds shows errors rather than a figure of something else."""
    pending = {client: iter(ids) for client, ids in seeded.items()}

    async def call(session: aiohttp.ClientSession, client: int) -> bool:
        message_id = next(pending[client], None)
        if message_id is None:
            return False
        arguments = {"alias": f"ack-{clients}-{client}", "message_id": message_id}
        return (await tool(session, url, "ack_inbox", arguments)).get("ok") is True

    return call


def agent_loop(url: str, clients: int) -> Call:
    """One turn of an agent: status → inbox → ack → working → completion. An idle turn (3 calls: the
    seeded tasks ran out) fails: the figure is of the 5-call loop."""

    async def call(session: aiohttp.ClientSession, client: int) -> bool:
        alias, resume = loop_alias(clients, client), f"mix-resume-{clients}-{client}"
        ok = (await tool(session, url, "report_status", {"alias": alias, "resume_id": resume, "status": "idle"})).get(
            "ok"
        )
        inbox = await tool(session, url, "get_inbox", {"alias": alias, "limit": 1})
        for message in inbox.get("messages", []):
            acked = await tool(session, url, "ack_inbox", {"alias": alias, "message_id": message["id"]})
            working = {"alias": alias, "resume_id": resume, "status": "working", "task": message["task_id"]}
            started = await tool(session, url, "report_status", working)
            done = {"alias": alias, "task": message["task_id"], "result": "done", "score": 8}
            completed = await tool(session, url, "report_completion", done)
            ok = ok and acked.get("ok") and started.get("ok") and completed.get("task_id") == message["task_id"]
        return bool(ok and inbox.get("ok") and inbox.get("messages"))

    return call


def rest_send(url: str) -> Call:
    async def call(session: aiohttp.ClientSession, client: int) -> bool:
        status, _ = await post_json(session, f"{url}/api/v1/tasks", {"alias": f"rest-{client}", "task": "via REST"})
        return status == 201

    return call


def rest_inbox(url: str) -> Call:
    async def call(session: aiohttp.ClientSession, client: int) -> bool:
        status, reply = await get_json(session, f"{url}/api/v1/sessions/inbox-{client}/inbox")
        return status == 200 and reply["ok"]

    return call


def plain(url: str, path: str, *, post: bool) -> Call:
    async def call(session: aiohttp.ClientSession, client: int) -> bool:
        if post:
            status, _ = await post_json(session, f"{url}{path}", {"jsonrpc": "2.0", "id": client, "params": {}})
        else:
            status, _ = await get_json(session, f"{url}{path}")
        return status == 200

    return call


def any_of(task_ids: list[str]) -> Any:
    return lambda client: {"task_id": random.choice(task_ids)}
