"""The fast lane: an agent's get_inbox, get_task and ack_inbox over POST /mcp on PostgreSQL, on the
event loop.

Ahead of commhub.lean (which it falls back to), for the common valid call only: one JSON-RPC request
(no batch) calling get_inbox without a wait, get_task of a task the caller may see, or ack_inbox
without an idempotency_key, in an accepted protocol version (a modern one's envelope and headers
checked by the endpoint's own check), with a bearer token. Everything that decides the answer is the
ordinary path's own code, run here without Django's request machinery (and, for the reads, a thread):

- the host and origin checks, SecurityMiddleware's redirect and headers, X-Frame-Options and the
  CSP (commhub.lean's, through the middlewares' own methods, remembered by the inputs they read:
  commhub.front); the answer rendered as hub_mcp.views._json renders it, sent without Django's
  request and response objects;
- authentication: the actor this process remembers for the token (hub_agents.services
  .token_remembered: its access generation read within the last 0.25 s, so a revoked token is
  refused here as everywhere within a second); otherwise token_authenticate, on the shared pool;
- the tool: its profile (hub_mcp.handlers.callable_tool), its own argument parsing and caller
  checks (hub_tools.tool.Tool.prepared: the identity policy, on the pool when this process has not
  got it in memory), its span (tracing.tool), its render, the endpoint's JSON rendering;
- get_inbox itself (hub_tasks.inbox's steps): deadlines settled first (nothing to do while this
  process's copy says none has passed, else hub_tasks.settled on the pool), then one prepared
  statement that renews the alias's leases and reads the inbox (hub_tasks.reads.inbox_read, the
  statement the ordinary path runs through Django's cursor), then the receipts of messages read for
  the first time (hub_tasks.inbox.inbox_received_on: one transaction, sent as one pipeline);
- get_task: deadlines settled as above, then one prepared statement for the task and its lists
  (hub_tasks.reads.task_read, which task_with_history runs through Django's cursor);
- ack_inbox, a write: its checks once, on the pool (Tool.prepared, where the write limit counts
  it), then one statement that acks a message with no task behind it and renews the alias's leases
  (hub_tasks.acks.untasked_acked, which inbox_ack runs too); anything it does not match (a task's
  message, a refusal) is inbox_ack's, on the pool. Once counted, a write never falls back: a refusal
  is answered here as Tool.call answers it, and a failure of the lane's pool is inbox_ack's to answer.

Anything else (another method or tool, a wait, a refusal of any kind, a fault) goes to commhub.lean
with the body already read, so every refusal, error shape and status is the ordinary path's;
tests/commhub/test_hot_lane.py compares the two answers byte for byte.

The statement runs on a psycopg async pool of this process (COMMHUB_HOT_POOL_SIZE connections,
0 turns the lane off), with server-side prepared statements (prepare_threshold=0) planned once
(plan_cache_mode force_generic_plan) in autocommit,
built from Django's DATABASES settings and opened on first use on the worker's event loop; its
connections end with the process (the hub's ASGI app takes no lifespan messages; `close` is for
the tests). What wraps commhub.lean wraps the lane too (commhub.asgi): the request id and log
context, the request metrics, the server span; the caller is on the log lines from authentication
on (hub_agents.services._in_logs), as on the ordinary path. Reads count against no rate limit.
A failure of the lane itself (the pool, a bug) is logged and the ordinary path answers: nothing is
sent before the answer is whole.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.db import connections
from django.http import QueryDict
from django.utils import timezone

from commhub.front import json_headers
from commhub.lean import MCP_PATHS, Receive, Scope, Send, lean_app
from hub_agents import actor_cache
from hub_agents.actors import Actor
from hub_agents.services import token_authenticate, token_remembered
from hub_core import tracing
from hub_core.bearer import bearer_token
from hub_core.errors import HubError
from hub_core.waiting import in_pool
from hub_mcp import views
from hub_mcp.handlers import callable_tool, stamped, tool_payload
from hub_mcp.protocol import (
    DEFAULT_HEADERLESS_VERSION,
    HANDSHAKE_VERSIONS,
    MODERN_VERSIONS,
    TOOLS_QUERY,
    Exchange,
    Message,
    RpcError,
    response,
)
from hub_tasks.acks import untasked_acked
from hub_tasks.deadlines import networks_known_clear
from hub_tasks.inbox import inbox_received_on
from hub_tasks.reads import Statement, inbox_read, task_read
from hub_tasks.results import TaskHistory
from hub_tasks.settled import tasks_settled
from hub_tools.replays import KEY

logger = logging.getLogger(__name__)

TOOLS = frozenset({"get_inbox", "get_task", "ack_inbox"})

# How many calls this process answered in the lane (the rest fell back): for the tests and profiles.
answered = 0


class _Fallback(Exception):
    """Not the lane's to answer: the ordinary path answers it."""


def enabled() -> bool:
    return settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and bool(
        settings.COMMHUB_HOT_POOL_SIZE
    )


async def hot_app(scope: Scope, receive: Receive, send: Send) -> None:
    """commhub.lean's app, with get_inbox over POST /mcp answered in the lane."""
    if scope["method"] != "POST" or scope["path"] not in MCP_PATHS:
        await lean_app(scope, receive, send)
        return
    body = await _read_body(receive)
    if body is None:
        return  # the client left before its body was complete
    try:
        await _answer(scope, body, send)
    except _Fallback:
        await lean_app(scope, _replaying(body, receive), send)
        return
    except Exception:  # nothing is sent before the answer is whole: the ordinary path answers instead
        logger.exception("the fast lane failed; the ordinary path answers")
        await lean_app(scope, _replaying(body, receive), send)
        return
    global answered
    answered += 1


async def _read_body(receive: Receive) -> bytes | None:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # then the server's own messages (a disconnect)

    return replay


async def _answer(scope: Scope, body: bytes, send: Send) -> None:
    if len(body) > settings.COMMHUB_MAX_REQUEST_BYTES:
        raise _Fallback
    headers = json_headers(scope)  # the host, redirect and origin checks passed, and the answer's headers
    if headers is None:
        raise _Fallback
    try:
        raw = json.loads(body)
    except (ValueError, RecursionError):
        raise _Fallback from None
    if not isinstance(raw, dict):
        raise _Fallback
    message = Message(raw)
    version = _header(scope, b"mcp-protocol-version")
    modern = version in MODERN_VERSIONS
    if not modern and version is not None and version not in HANDSHAKE_VERSIONS:
        raise _Fallback
    exchange = Exchange(version=version or DEFAULT_HEADERLESS_VERSION, modern=modern, tools=_tools_query(scope))
    try:
        message.check_shape()
        if not message.is_request or message.method != "tools/call" or message.params.get("name") not in TOOLS:
            raise _Fallback
        if modern:
            views._check_envelope(ASGIRequest(scope, io.BytesIO(body)), message, exchange.version)
        actor = await _caller(_header(scope, b"authorization"))
        tool = callable_tool(message.params["name"], exchange, actor)
    except (RpcError, HubError):
        raise _Fallback from None
    arguments = message.params.get("arguments")
    arguments = {} if arguments is None else arguments
    if not isinstance(arguments, dict):
        raise _Fallback
    with tracing.tool(tool.name):
        outcome = await _LANES[tool.name](tool, actor, arguments)
    reply = response(message.id, stamped(tool_payload(outcome, exchange), exchange))
    content = views.json_bytes(reply)
    await send({"type": "http.response.start", "status": 200, "headers": [*headers, _length(content)]})
    await send({"type": "http.response.body", "body": content})


def _header(scope: Scope, name: bytes) -> str | None:
    """A request header as Django reads it (ASGIRequest.META): repeated ones joined by commas."""
    values = [value.decode("latin-1") for key, value in scope["headers"] if key == name]
    return ",".join(values) if values else None


def _tools_query(scope: Scope) -> str | None:
    query = scope.get("query_string", b"")
    if not query:
        return None
    try:
        return QueryDict(query.decode()).get(TOOLS_QUERY)  # decoded as ASGIRequest decodes it
    except UnicodeDecodeError:
        raise _Fallback from None


def _length(content: bytes) -> tuple[bytes, bytes]:
    return (b"content-length", str(len(content)).encode("ascii"))


async def _caller(authorization: str | None) -> Actor:
    token = bearer_token(authorization)
    if token is None:
        raise _Fallback
    actor = token_remembered(raw=token)
    if actor is None:
        actor = await in_pool(lambda: token_authenticate(raw=token))
    return actor


async def _prepared(tool: Any, actor: Actor, arguments: dict[str, Any]) -> tuple[Actor, dict[str, Any]]:
    """The tool's own checks and parsing (Tool.prepared); on the pool if they may read the database
    (a tool naming its caller, get_inbox's alias, in a network whose identity policy this process
    has not got in memory; get_task names none and reads nothing)."""
    try:
        if not tool.callers or all(actor_cache.memo_known(network, "identity_policy") for network in actor.roles):
            return tool.prepared(actor, arguments)
        return await in_pool(lambda: tool.prepared(actor, arguments))
    except HubError:
        raise _Fallback from None


async def _settled(actor: Actor) -> datetime:
    """hub_tasks.settled.tasks_settled: nothing to do while this process's copies say no deadline
    of the caller's networks has passed (no query), else on the pool. Returns the time it holds for."""
    now = timezone.now()
    if networks_known_clear(actor.readable_networks(), now):
        return now
    await in_pool(lambda: tasks_settled(actor=actor))
    return timezone.now()


async def _task(tool: Any, actor: Actor, arguments: dict[str, Any]) -> dict[str, Any]:
    """get_task (settled(task_with_history)), the statement on the lane's pool."""
    actor, parsed = await _prepared(tool, actor, arguments)
    await _settled(actor)
    found = await task_read(await _driver(), networks=actor.readable_networks(), task_id=parsed["task_id"])
    if found is None:
        raise _Fallback  # the ordinary path's refusal (task_not_found)
    return tool.outcome(TaskHistory(**found))


async def _inbox(tool: Any, actor: Actor, arguments: dict[str, Any]) -> dict[str, Any]:
    """hub_tasks.inbox.inbox_fetch's steps, the statement on the lane's pool."""
    actor, parsed = await _prepared(tool, actor, arguments)
    if parsed["wait_seconds"]:
        raise _Fallback  # a long-poll: hub_core.waiting's
    try:
        networks = actor.readable_networks(parsed["network_id"])
    except HubError:
        raise _Fallback from None
    now = await _settled(actor)
    alias = parsed["alias"]
    rows = await inbox_read(
        await _driver(),
        networks=networks,
        alias=alias,
        limit=parsed["limit"],
        renew=actor.writable_networks(parsed["network_id"]),
        now=now,
    )
    return tool.outcome(await inbox_received_on(await _driver(), actor=actor, alias=alias, rows=rows))


async def _ack(tool: Any, actor: Actor, arguments: dict[str, Any]) -> dict[str, Any]:
    """ack_inbox as Tool.call answers it: its checks made once, on the pool (Tool.prepared: the write
    limit counts it there); then hub_tasks.acks' one statement for a message with no task behind
    it, on the lane's pool; whatever that does not match (a task's message, a refusal), inbox_ack on
    the pool. From admission on it never falls back: the ordinary path would count the write again."""
    if arguments.get(KEY) is not None or tool.gateable:
        raise _Fallback  # a replayable call (hub_tools.replays' record first), or one a rule may hold
    try:
        actor, parsed = await in_pool(lambda: tool.prepared(actor, arguments))
        writable = actor.writable_networks()
        try:
            alias, message_id = parsed["alias"], parsed["message_id"]
            db = await _driver()
            acked = await untasked_acked(db, networks=writable, alias=alias, message_id=message_id, now=timezone.now())
        except Exception:  # the lane's pool failed (had it written, inbox_ack says the message is acked)
            logger.exception("the fast lane's ack failed; inbox_ack answers")
            acked = False
        if not acked:
            await in_pool(lambda: tool.service(actor=actor, **parsed))
        return tool.outcome(None)
    except HubError as refusal:
        return refusal.as_result()


_LANES = {"get_inbox": _inbox, "get_task": _task, "ack_inbox": _ack}


# --- the pool ------------------------------------------------------------------------------------


class PoolDriver:
    """hub_tasks.reads' driver over the lane's psycopg pool."""

    vendor = "postgresql"

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    async def rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(sql, params)
            return await cursor.fetchall()

    async def written(self, statements: Sequence[Statement]) -> list[tuple[Any, ...]]:
        """In one transaction, sent as one pipeline: one round trip for them all."""
        async with self.pool.connection() as conn:
            async with conn.pipeline(), conn.transaction():
                cursors = [await conn.execute(sql, params) for sql, params in statements]
            return await cursors[-1].fetchall()

    def after_commit(self, then: Callable[[], None]) -> None:
        then()  # `written` returns once committed


_drivers: dict[asyncio.AbstractEventLoop, PoolDriver] = {}
_opening: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}


async def _configure(conn: Any) -> None:
    from psycopg.types.string import TextLoader

    conn.prepare_threshold = 0  # prepared server-side on first use
    # ... and planned once: PostgreSQL's default re-planned every call (a custom plan, ~0.2 ms of the
    # server's CPU for get_inbox's statement) because the generic plan, which knows no alias, looked
    # dearer on paper. The lane's statements are written for their generic plans (hub_tasks.reads).
    await conn.execute("SET plan_cache_mode = force_generic_plan")
    conn.adapters.register_loader("jsonb", TextLoader)  # JSON columns as text, as Django reads them


async def _driver() -> PoolDriver:
    loop = asyncio.get_running_loop()
    driver = _drivers.get(loop)
    if driver is not None:
        return driver
    async with _opening.setdefault(loop, asyncio.Lock()):
        if loop not in _drivers:
            from psycopg_pool import AsyncConnectionPool

            params = connections["default"].get_connection_params()
            kwargs = {key: params[key] for key in ("dbname", "user", "password", "host", "port") if params.get(key)}
            size = settings.COMMHUB_HOT_POOL_SIZE
            pool = AsyncConnectionPool(
                min_size=size,
                max_size=size,
                open=False,
                configure=_configure,
                kwargs={**kwargs, "autocommit": True},
                timeout=10,
            )
            await pool.open(wait=True)
            _drivers[loop] = PoolDriver(pool)
    return _drivers[loop]


async def close() -> None:
    """Close this event loop's pool (a worker's lifespan shutdown; the tests)."""
    driver = _drivers.pop(asyncio.get_running_loop(), None)
    _opening.pop(asyncio.get_running_loop(), None)
    if driver is not None:
        await driver.pool.close()
