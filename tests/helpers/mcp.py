"""JSON-RPC over POST /mcp through Django's test client, in the handshake era."""

from __future__ import annotations

import json
from typing import Any

MCP = "/mcp"
LATEST = "2025-11-25"


def post(client, body: Any, *, version: str | None = None, token: str | None = None, headers=None, path=MCP):
    """POST a body (a JSON value, or raw bytes sent as they are) with the MCP headers asked for."""
    sent = {}
    if version is not None:
        sent["MCP-Protocol-Version"] = version
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    sent |= headers or {}
    data = body if isinstance(body, bytes) else json.dumps(body)
    return client.post(path, data=data, content_type="application/json", headers=sent)


def request(method: str, params: dict | None = None, *, id: Any = 1) -> dict:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        body["params"] = params
    return body


def send_task_body(task: str) -> bytes:
    """The raw body of a tools/call of send_task to "coder" with `task`."""
    call = {"name": "send_task", "arguments": {"alias": "coder", "task": task}}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}).encode()


def rpc(client, method: str, params: dict | None = None, *, id: Any = 1, **options):
    """A handshake-era request (version=None sends no MCP-Protocol-Version header)."""
    return post(client, request(method, params, id=id), **options)


def call(client, tool: str, arguments: Any, *, token: str, version: str | None = LATEST) -> dict:
    """tools/call in the handshake era; the JSON-RPC result (a protocol error fails the test)."""
    reply = rpc(client, "tools/call", {"name": tool, "arguments": arguments}, version=version, token=token)
    assert reply.status_code == 200, reply.content
    body = reply.json()
    assert "error" not in body, body
    return body["result"]
