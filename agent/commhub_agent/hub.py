"""Talking to the hub: its tools over MCP (JSON-RPC on POST /mcp) and its SSE feed."""

from __future__ import annotations

import json
import os
import random
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import httpx

T = TypeVar("T")

# The tools whose `alias` names the caller itself: a companion fills it in. (In send_task,
# send_message and send_reply the alias is the addressee, so the agent always says it.)
SELF_ALIAS_TOOLS = frozenset(
    {"report_status", "get_inbox", "ack_inbox", "report_completion", "get_session_status", "claim_task"}
)

# The tools whose `from_session` names the sender: a companion signs with its own alias when the
# model leaves it out, or the sender would be "hub" and the answer would reach nobody.
FROM_SESSION_TOOLS = frozenset(
    {"send_task", "send_message", "send_reply", "send_ack", "retry_task", "cancel_task", "reassign_task"}
)

# The contract's limits on what a companion sends (report_completion.result, send_reply.text, ...).
RESULT_MAX = 50_000
TEXT_MAX = 10_000
OUTPUT_MAX = 50_000


# The handshake era's newest version: tool results carry structuredContent as well as the text.
# (Stateless POSTs: the hub answers tools/list and tools/call without an initialize first.)
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


class HubUnavailable(Exception):
    """The hub did not answer (network, restart, 5xx, 429): worth retrying later."""


class HubRefused(Exception):
    """The hub answered with a refusal that retrying will not change (bad token, bad argument)."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__(f"{result.get('error')}: {result.get('message')}")
        self.result = result


@dataclass(frozen=True)
class Config:
    hub: str
    token: str
    alias: str

    @property
    def resume_id(self) -> str:
        # Stable across restarts of one companion on one machine, so the hub keeps one session row.
        return f"commhub-agent:{socket.gethostname()}:{self.alias}"


def config_from(hub: str | None, alias: str) -> Config:
    url = (hub or os.environ.get("COMMHUB_URL") or "").rstrip("/")
    token = os.environ.get("COMMHUB_TOKEN", "")
    if not url:
        raise SystemExit("commhub-agent: give the hub's URL with --hub or COMMHUB_URL (e.g. http://127.0.0.1:8000)")
    if not token:
        raise SystemExit("commhub-agent: set COMMHUB_TOKEN to an agent token of the hub (ntok_…)")
    return Config(hub=url, token=token, alias=alias)


def truncate(text: str, limit: int, *, keep: str = "head") -> str:
    """At most `limit` characters; says that it cut, so a reader never mistakes a part for the whole."""
    if len(text) <= limit:
        return text
    marker = f"\n…[truncated {len(text) - limit + 40} characters]…\n"
    room = limit - len(marker)
    return text[:room] + marker if keep == "head" else marker + text[-room:]


class Hub:
    """One agent's connection to the hub. Refusals come back as result objects ({"ok": false});
    only an unreachable hub raises (HubUnavailable)."""

    def __init__(
        self, config: Config, *, timeout: float = 90.0, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.config = config
        self._http = httpx.AsyncClient(
            transport=transport,  # tests pass an httpx.MockTransport
            base_url=config.hub,
            headers={"Authorization": f"Bearer {config.token}"},
            timeout=httpx.Timeout(timeout, connect=10.0),
            # Idle connections are dropped well before a server's keep-alive timeout (uvicorn: 5 s),
            # so a request never goes out on a connection the server is closing at that moment.
            limits=httpx.Limits(keepalive_expiry=2.0),
        )
        self._ids = 0

    async def aclose(self) -> None:
        await self._http.aclose()

    async def rpc(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A JSON-RPC request to /mcp; its `result` object."""
        self._ids += 1
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self._ids, "method": method}
        if params is not None:
            body["params"] = params
        try:
            reply = await self._http.post("/mcp", json=body, headers=MCP_HEADERS)
        except httpx.HTTPError as exc:
            raise HubUnavailable(f"{method}: {exc!r}") from exc
        if reply.status_code == 429 or reply.status_code >= 500:
            raise HubUnavailable(f"{method}: HTTP {reply.status_code}")
        try:
            answer = reply.json()
        except ValueError as exc:
            raise HubUnavailable(f"{method}: HTTP {reply.status_code}, not JSON") from exc
        if reply.status_code == 401:
            raise HubRefused({"ok": False, "error": "unauthorized", "message": str(answer)})
        if "error" in answer:
            raise HubRefused({"ok": False, "error": "protocol_error", "message": json.dumps(answer["error"])})
        return answer["result"]

    async def call_raw(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """tools/call: the CallToolResult exactly as the hub sent it."""
        result = await self.rpc("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError") and _result_object(result).get("error") == "rate_limited":
            raise HubUnavailable(f"{tool}: rate limited")  # the hub's write limit: a wait, not a refusal
        return result

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """tools/call: the tool's result object ({"ok": true, ...} or a refusal)."""
        return _result_object(await self.call_raw(tool, {k: v for k, v in arguments.items() if v is not None}))

    async def list_tools(self) -> list[dict[str, Any]]:
        return (await self.rpc("tools/list"))["tools"]

    async def whoami(self, *, timeout: float = 30.0) -> dict[str, Any] | None:
        """GET /api/v1/whoami: who this token is (its binding, its networks' roles and identity
        policies). None from a hub older than bindings, which has no such endpoint (404)."""
        try:
            reply = await self._http.get("/api/v1/whoami", timeout=httpx.Timeout(timeout, connect=10.0))
        except httpx.HTTPError as exc:
            raise HubUnavailable(f"whoami: {exc!r}") from exc
        if reply.status_code == 404:
            return None
        if reply.status_code == 429 or reply.status_code >= 500:
            raise HubUnavailable(f"whoami: HTTP {reply.status_code}")
        try:
            answer = reply.json()
        except ValueError as exc:
            raise HubUnavailable(f"whoami: HTTP {reply.status_code}, not JSON") from exc
        if reply.status_code != 200 or not isinstance(answer, dict) or answer.get("ok") is not True:
            shown = answer if isinstance(answer, dict) else {"message": str(answer)[:500]}
            raise HubRefused({"error": f"http_{reply.status_code}", **shown, "ok": False})
        return answer

    async def events(self, alias: str, last_event_id: int | None) -> AsyncIterator[tuple[int, str, dict[str, Any]]]:
        """One SSE connection to /events/{alias}: (id, type, frame) until it ends (then HubUnavailable)."""
        headers = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        # No read timeout: the hub sends a keepalive every 15 s; a dead link is caught at 60 s below.
        timeout = httpx.Timeout(60.0, connect=10.0)
        try:
            async with self._http.stream("GET", f"/events/{alias}", headers=headers, timeout=timeout) as reply:
                if reply.status_code in (401, 403, 404) or 400 <= reply.status_code < 429:
                    body = (await reply.aread()).decode(errors="replace")
                    raise HubRefused({"ok": False, "error": f"http_{reply.status_code}", "message": body})
                if reply.status_code != 200:
                    raise HubUnavailable(f"events: HTTP {reply.status_code}")
                async for event in parse_sse(reply.aiter_lines()):
                    yield event
        except httpx.HTTPError as exc:
            raise HubUnavailable(f"events: {exc!r}") from exc
        raise HubUnavailable("events: the stream ended")


def _result_object(result: dict[str, Any]) -> dict[str, Any]:
    if isinstance(result.get("structuredContent"), dict):
        return result["structuredContent"]
    try:
        return json.loads(result["content"][0]["text"])
    except (KeyError, IndexError, ValueError):
        return {"ok": False, "error": "unreadable_result", "message": json.dumps(result)[:500]}


async def parse_sse(lines: AsyncIterator[str]) -> AsyncIterator[tuple[int, str, dict[str, Any]]]:
    """Server-Sent Events frames with an id and JSON data, as (id, type, data)."""
    fields: dict[str, str] = {}
    async for line in lines:
        if line == "":
            if "data" in fields and "id" in fields:
                yield int(fields["id"]), fields.get("event", "message"), json.loads(fields["data"])
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            fields[name] = fields[name] + "\n" + value if name == "data" and name in fields else value


class Backoff:
    """Exponential backoff with jitter, 0.5 s up to 10 s; reset after a success."""

    def __init__(self, first: float = 0.5, most: float = 10.0) -> None:
        self.first, self.most, self.delay = first, most, first

    def reset(self) -> None:
        self.delay = self.first

    async def sleep(self) -> None:
        await anyio.sleep(self.delay * random.uniform(0.8, 1.2))
        self.delay = min(self.most, self.delay * 2)


async def persist(
    attempt: Callable[[], Awaitable[T]], *, give_up: Callable[[], bool] = lambda: False, log: Callable[[str], None]
) -> T:
    """Retry `attempt` while the hub is unavailable (until `give_up()`); refusals pass through."""
    backoff = Backoff()
    while True:
        try:
            return await attempt()
        except HubUnavailable as exc:
            if give_up():
                raise
            log(f"hub unavailable ({exc}); retrying in {backoff.delay:.1f}s")
            await backoff.sleep()
