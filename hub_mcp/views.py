"""POST /mcp: JSON-RPC over Streamable HTTP, stateless.

Answers are JSON, except one case: a long-poll (get_inbox with wait_seconds) that has to wait, from
a client that accepts `text/event-stream` and sent a progressToken, is answered as SSE: progress
notifications every few seconds, then the answer.

The HTTP layer: methods, origin, size, parsing, era routing, authentication and status codes.
What each method answers is in handlers.py; what each tool does is in the services.

Two kinds of failure, each in one shape: a protocol fault (bad JSON, bad envelope, no token) is a
JSON-RPC error object (`RpcError`, rendered by `_fault`); a tool's refusal is a successful JSON-RPC
result `{"ok": false, "error": ..., "code": ..., "message": ...}` in which `error` is the tool
contract's wording ("task not found") and `code` the machine code REST calls `error`
(HubError.as_result, applied by hub_tools for every tool).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.request import validate_host
from django.views.decorators.csrf import csrf_exempt

from hub_agents.actors import Actor
from hub_agents.services import token_authenticate
from hub_core.bearer import WWW_AUTHENTICATE, bearer_token
from hub_core.body import read_body
from hub_core.errors import HubError
from hub_core.waiting import Pending, Poll, no_waiting
from hub_mcp.handlers import answer
from hub_mcp.protocol import (
    BATCH_VERSIONS,
    CLIENT_CAPABILITIES_META,
    DEFAULT_HEADERLESS_VERSION,
    HANDSHAKE_VERSIONS,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_HEADER,
    MODERN_ERROR_STATUS,
    MODERN_VERSIONS,
    NAME_HEADER,
    PARSE_ERROR,
    PROTOCOL_VERSION_META,
    TOOLS_QUERY,
    UNAUTHORIZED,
    VERSION_HEADER,
    Exchange,
    Message,
    RpcError,
    error_response,
    response,
    unsupported_version,
)

logger = logging.getLogger(__name__)


def json_bytes(body: Any) -> bytes:
    """An answer's body as /mcp writes it (the fast lane, commhub.hot, too). ASCII-escaped: whatever
    a client sent and the answer echoes (ids, names), it always encodes. Without spaces after
    separators: tools/list is a tenth smaller."""
    return json.dumps(body, cls=DjangoJSONEncoder, separators=(",", ":")).encode()


def _json(body: Any, status: int = 200, **headers: str) -> HttpResponse:
    reply = HttpResponse(json_bytes(body), status=status, content_type="application/json")
    for name, value in headers.items():
        reply[name.replace("_", "-")] = value
    return reply


def _fault(error: RpcError, status: int, request_id: Any = None) -> HttpResponse:
    return _json(error_response(request_id, error), status=error.http_status or status)


class Unauthorized(Exception):
    def __init__(self, message: str, *, invalid_token: bool) -> None:
        super().__init__(message)
        self.invalid_token = invalid_token


@csrf_exempt
async def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    # Async only so that get_inbox with wait_seconds can wait without a thread (hub_core.waiting).
    poll = Poll(lambda: _respond(request))
    outcome = await poll.first()
    if not isinstance(outcome, Pending):
        return outcome
    progress = _progress_request(request)
    if progress is not None:
        # A client that asked for progress may restart its timeout on each notification: report
        # while waiting, so a wait longer than that timeout still ends in the answer (MCP Streamable
        # HTTP allows an SSE answer to a POST).
        return _event_stream(_progress_events(poll, outcome, *progress))
    try:
        while isinstance(outcome, Pending):
            outcome = await poll.wait()
        return outcome
    finally:
        await poll.close()


def _progress_request(request: HttpRequest) -> tuple[Any, str | int] | None:
    """(id, progressToken) of a request that may be answered as SSE with progress, else None.

    Only a client that accepts `text/event-stream` and asked for progress gets one; everyone else
    keeps the plain JSON answer. Called only for a request that would wait: one valid message.
    """
    if not any(f"{kind.main_type}/{kind.sub_type}".lower() == "text/event-stream" for kind in request.accepted_types):
        return None
    body = json.loads(read_body(request))  # read (and size-checked) once already, by _respond
    params = body.get("params") if isinstance(body, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    if isinstance(token, bool) or not isinstance(token, str | int):
        return None
    return body.get("id"), token


def _event_stream(events: AsyncIterator[str]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(events, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # proxies must pass each event on at once
    return response


async def _progress_events(
    poll: Poll[HttpResponse], pending: Pending, request_id: Any, token: str | int
) -> AsyncIterator[str]:
    """A progress notification at once and every few seconds, then the answer, then the end.

    Events carry no id: the answer is not kept anywhere to resume from, so a client must not
    try to reconnect for it.
    """
    try:
        outcome: HttpResponse | Pending = pending
        while isinstance(outcome, Pending):
            yield _event(_progress(token, outcome))
            outcome = await poll.wait(settings.COMMHUB_LONG_POLL_PROGRESS_SECONDS)
        answer = outcome.content.decode()
    except Exception:  # the headers are sent: the failure must still reach the client as JSON-RPC
        logger.exception("long-poll failed while streaming its progress")
        answer = json.dumps(error_response(request_id, RpcError(INTERNAL_ERROR, "Internal error; it has been logged.")))
    finally:
        await poll.close()
    yield _event(answer)


def _progress(token: str | int, pending: Pending) -> str:
    waited, total = round(pending.waited, 1), round(pending.total, 1)
    notification = {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {
            "progressToken": token,
            "progress": waited,
            "total": total,
            "message": f"Waiting for a message: {waited:.0f} s of {total:.0f} s.",
        },
    }
    return json.dumps(notification)


def _event(data: str) -> str:
    # One JSON-RPC message per event, on one line: json.dumps writes no newlines.
    return f"event: message\ndata: {data}\n\n"


def _respond(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        reply = _fault(RpcError(INVALID_REQUEST, "Method not allowed: /mcp takes JSON-RPC over POST."), 405)
        reply["Allow"] = "POST"
        return reply
    if not _origin_allowed(request.headers.get("Origin")):
        return _fault(RpcError(INVALID_REQUEST, "Forbidden: this Origin may not call the hub."), 403)
    try:
        body = _read_json(request)
    except RpcError as fault:
        return _fault(fault, 400)
    version = request.headers.get(VERSION_HEADER)
    tools = request.GET.get(TOOLS_QUERY)  # the connection's tool profile, if it narrows its token's
    try:
        actor = _authenticate(request.headers.get("Authorization"))
        if version in MODERN_VERSIONS:
            return _modern(request, body, Exchange(version=version, modern=True, tools=tools), actor)
        if version is not None and version not in HANDSHAKE_VERSIONS:
            return _fault(unsupported_version(version), 400)
        return _handshake(
            body, Exchange(version=version or DEFAULT_HEADERLESS_VERSION, modern=False, tools=tools), actor
        )
    except Unauthorized as refusal:
        challenge = WWW_AUTHENTICATE + (', error="invalid_token"' if refusal.invalid_token else "")
        first_id = body.get("id") if isinstance(body, dict) else None
        return _json(
            error_response(first_id, RpcError(UNAUTHORIZED, str(refusal))), status=401, WWW_Authenticate=challenge
        )


def _read_json(request: HttpRequest) -> Any:
    try:
        raw = read_body(request)  # the reader and limit REST uses too
    except HubError as refusal:
        raise RpcError(INVALID_REQUEST, refusal.message, http_status=refusal.status) from None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # bad UTF-8 and huge integers raise ValueError subclasses
        raise RpcError(PARSE_ERROR, "Parse error: the body is not valid JSON.") from None


def _origin_allowed(origin: str | None) -> bool:
    """Browsers send Origin; a page on another site must not drive a hub on localhost (DNS rebinding)."""
    if origin is None:
        return True
    if origin in settings.COMMHUB_ALLOWED_ORIGINS:
        return True
    try:
        host = urlsplit(origin).hostname
    except ValueError:  # e.g. "http://[::1" : not an origin at all
        return False
    return bool(host) and validate_host(host, settings.ALLOWED_HOSTS)


def _authenticate(authorization: str | None) -> Actor | None:
    """No header: an anonymous caller, who may shake hands but not call tools."""
    try:
        token = bearer_token(authorization)
    except HubError as refusal:
        raise Unauthorized(refusal.message, invalid_token=False) from None
    if token is None:
        return None
    try:
        return token_authenticate(raw=token)
    except HubError as refusal:
        raise Unauthorized(refusal.message, invalid_token=True) from None


def _require_actor(message: Message, actor: Actor | None) -> None:
    if message.method == "tools/call" and actor is None:
        raise Unauthorized(
            "tools/call needs a token: send Authorization: Bearer <ntok_…|utok_…> "
            "(an operator makes one with `manage.py create_token`).",
            invalid_token=False,
        )


def _handshake(body: Any, exchange: Exchange, actor: Actor | None) -> HttpResponse:
    """The 2024-11-05 … 2025-11-25 era: one message, or a batch where the version allows it."""
    batch = isinstance(body, list)
    if batch and exchange.version not in BATCH_VERSIONS:
        fault = RpcError(INVALID_REQUEST, f"JSON-RPC batches are not accepted in protocol {exchange.version}.")
        return _fault(fault, 400)
    if batch and not body:
        return _fault(RpcError(INVALID_REQUEST, "Invalid request: empty batch."), 400)
    if batch:
        with no_waiting():  # a batch runs once: a waiting get_inbox in it answers at once
            return _handshake_messages(body, exchange, actor, batch=True)
    return _handshake_messages([body], exchange, actor, batch=False)


def _handshake_messages(messages: list[Any], exchange: Exchange, actor: Actor | None, *, batch: bool) -> HttpResponse:
    checked: list[Message | RpcError] = []
    for raw in messages:
        message = Message(raw if isinstance(raw, dict) else {})
        try:
            if not isinstance(raw, dict):
                raise RpcError(INVALID_REQUEST, "Invalid request: a message must be a JSON object.")
            message.check_shape()
            if batch and message.method == "initialize":
                raise RpcError(INVALID_REQUEST, "Invalid request: initialize must not be part of a batch.")
        except RpcError as fault:
            checked.append(fault)
            continue
        _require_actor(message, actor)
        checked.append(message)

    replies = []
    for item in checked:
        if isinstance(item, RpcError):
            replies.append(error_response(None, item))
        elif item.is_request:
            replies.append(_reply(item, exchange, actor))
    if not replies:
        return HttpResponse(status=202)  # notifications and responses only
    if batch:
        return _json(replies)
    status = 400 if isinstance(checked[0], RpcError) else 200
    return _json(replies[0], status=status)


def _reply(message: Message, exchange: Exchange, actor: Actor | None) -> dict[str, Any]:
    try:
        return response(message.id, answer(message.method, message.params, exchange, actor))
    except RpcError as fault:
        return error_response(message.id, fault)


def _modern(request: HttpRequest, body: Any, exchange: Exchange, actor: Actor | None) -> HttpResponse:
    """The 2026-07-28 era: one self-contained request per POST, headers agreeing with the body."""
    if not isinstance(body, dict):
        return _fault(RpcError(INVALID_REQUEST, "Body must be a single JSON-RPC request or notification."), 400)
    message = Message(body)
    try:
        message.check_shape()
    except RpcError as fault:
        return _fault(fault, 400)
    if message.is_notification:
        return HttpResponse(status=202)
    if not message.is_request:
        return _fault(RpcError(INVALID_REQUEST, "Body must be a single JSON-RPC request or notification."), 400)
    try:
        _check_envelope(request, message, exchange.version)
        _require_actor(message, actor)
        result = answer(message.method, message.params, exchange, actor)
    except RpcError as fault:
        return _fault(fault, MODERN_ERROR_STATUS.get(fault.code, 200), message.id)
    return _json(response(message.id, result))


def _check_envelope(request: HttpRequest, message: Message, header_version: str) -> None:
    """The per-request envelope in params._meta, and the routing headers that must mirror the body."""
    meta = message.params.get("_meta")
    if not isinstance(meta, dict):
        raise RpcError(
            INVALID_PARAMS,
            f"params._meta must be an object carrying {PROTOCOL_VERSION_META!r} and {CLIENT_CAPABILITIES_META!r}.",
        )
    missing = [key for key in (PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META) if key not in meta]
    if missing:
        raise RpcError(INVALID_PARAMS, f"params._meta is missing {', '.join(missing)}.")
    # The header already named a version this hub serves; the body must say the same.
    if meta[PROTOCOL_VERSION_META] != header_version:
        raise RpcError(HEADER_MISMATCH, f"{VERSION_HEADER} header does not match params._meta's protocol version.")
    if request.headers.get(METHOD_HEADER) != message.method:
        raise RpcError(HEADER_MISMATCH, f"{METHOD_HEADER} header does not match the request's method.")
    name = message.params.get("name")
    if message.method == "tools/call" and name is not None:
        if _decode_header(request.headers.get(NAME_HEADER)) != name:
            raise RpcError(HEADER_MISMATCH, f"{NAME_HEADER} header does not match the tool name.")


def _decode_header(value: str | None) -> str | None:
    """Undo the `=?base64?…?=` wrapping clients use for values that are not plain header text."""
    if value is None or not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    payload = value[len("=?base64?") : -len("?=")]
    try:
        return base64.b64decode(payload, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


@csrf_exempt
def well_known_not_found(request: HttpRequest, path: str) -> HttpResponse:
    """Clients probe /.well-known/* (OAuth metadata); the hub serves none, and says so in JSON.

    An HTTP answer, not a tool result: `error` is the machine code here, as on REST; the contract's
    wording of `error` is only in tool results (`{"ok": false, ...}` inside a JSON-RPC result).
    """
    return _json({"error": "not_found", "message": f"/.well-known/{path} is not served by this hub."}, status=404)
