"""Request ids and JSON log lines (COMMHUB_LOG_FORMAT=json).

`with_request_context` wraps the whole ASGI application (commhub.asgi): every HTTP request and
websocket connection gets a request id (the client's `X-Request-ID` when it is sane, else a new
one), kept in hub_core.logcontext for every line logged while it is served, and echoed as the
response's (or the websocket handshake's) `X-Request-ID`. It sits outside the lean path
(commhub.lean) and Django's handler alike, so agents' calls served ahead of Django carry it too.
The servers log their access line from within the application's `send` (daphne through
commhub.serving, uvicorn directly), so that line carries the id as well.

`JsonFormatter` writes one JSON object a line. A hand-written formatter rather than
python-json-logger: the fields are few and fixed, and the one thing that matters most here (no
token in any line, whatever a record's extra fields hold) is easiest to be sure of when the
finished line itself passes the redaction.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from commhub.security import TOKEN, redact
from hub_core import logcontext

HEADER = b"x-request-id"
# Bounded, and nothing a log reader or a header could trip on: ids as proxies and tracers make them
# (UUIDs, hex, base64, "Root=1-…").
SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:=+/-]{1,128}")

# Not commhub.lean's aliases: LOGGING loads this module while Django sets up, before any app.
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def request_id_from(headers: list[tuple[bytes, bytes]]) -> str:
    """The client's X-Request-ID if it is sane (and not a token), else a new id."""
    for name, value in headers:
        if name.lower() == HEADER:
            supplied = value.decode("latin-1")
            if SANE_REQUEST_ID.fullmatch(supplied) and not TOKEN.search(supplied):
                return supplied
            break
    return uuid.uuid4().hex


def with_request_context(app: ASGIApp) -> ASGIApp:
    async def application(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await app(scope, receive, send)
            return
        request_id = request_id_from(scope.get("headers", []))
        echoed = request_id.encode("latin-1")

        async def send_with_id(message: dict[str, Any]) -> None:
            if message["type"] in ("http.response.start", "websocket.accept"):  # (daphne drops the latter's)
                headers = [(name, value) for name, value in message.get("headers", []) if name.lower() != HEADER]
                message = {**message, "headers": [*headers, (HEADER, echoed)]}
            await send(message)

        token = logcontext.begin(request_id)
        try:
            await app(scope, receive, send_with_id)
        finally:
            logcontext.end(token)

    return application


# What every record has; anything else on a record came in through `extra=`.
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}
# Extras that are whole objects (a Django request, an ASGI scope with its headers), not facts, and
# uvicorn's copy of its message with terminal colours.
_SKIPPED = frozenset({"request", "scope", "color_message"})


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, request_id, actor, network, message, and the
    exception's traceback and the record's extra fields when there are any.

    Everything but the request's own fields is redacted as a whole, after serializing, as
    commhub.security.RedactTokens redacts messages: a token in an extra field is rewritten too.
    The request's fields are not: the id was refused if it held a token (request_id_from), and an
    actor's label names a token by its public prefix ("ntok_AbCd123 (ci-runner)"), which the
    token pattern would otherwise swallow."""

    def format(self, record: logging.LogRecord) -> str:
        context = logcontext.current()
        created = datetime.fromtimestamp(record.created, UTC)
        head = {
            "time": created.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "request_id": context.request_id if context else None,
            "actor": context.actor if context else None,
            "network": context.network if context else None,
        }
        body: dict[str, Any] = {"message": record.getMessage()}
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            body["exception"] = record.exc_text
        if record.stack_info:
            body["stack"] = self.formatStack(record.stack_info)
        extras = {
            key: value
            for key, value in vars(record).items()
            if key not in _STANDARD and key not in _SKIPPED and key not in head and key not in body
        }
        try:
            rest = json.dumps({**body, **extras}, default=str)
        except (TypeError, ValueError):  # an extra that will not serialize (a cycle): the line without extras
            rest = json.dumps(body, default=str)
        return f"{json.dumps(head)[:-1]}, {redact(rest)[1:]}"
