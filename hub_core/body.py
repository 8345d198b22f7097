"""Request bodies: one reader, one limit (COMMHUB_MAX_REQUEST_BYTES), however the body was framed.

Django and DRF size a body by its Content-Length: DRF reads a request without one as empty, and
Django checks its upload limit against the declared length only. A chunked request
(`Transfer-Encoding: chunked`) declares none, and ASGI servers pass it on without one, so `/api`
read a 2 MB chunked body as `{}` while `/mcp` read all of it. `whole_bodies` gives such a request
its real length before Django sees it (keeping no more than one byte past the limit), and
`read_body` is the one place both edges read a body and refuse it when it is too large.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest

from hub_core.errors import HubError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def body_too_large() -> HubError:
    limit = settings.COMMHUB_MAX_REQUEST_BYTES
    return HubError(
        "request_too_large",
        f"The request body is over {limit} bytes; send a smaller one (the limit is COMMHUB_MAX_REQUEST_BYTES).",
        status=413,
    )


def read_body(request: HttpRequest) -> bytes:
    """The request's body, or HubError `request_too_large` (413) past the limit."""
    limit = settings.COMMHUB_MAX_REQUEST_BYTES
    declared = request.META.get("CONTENT_LENGTH") or ""
    if declared.isdigit() and int(declared) > limit:
        raise body_too_large()  # refused before a byte of it is read
    try:
        raw = request.body
    except RequestDataTooBig:
        raise body_too_large() from None
    if len(raw) > limit:  # a body longer than it declared, or served without `whole_bodies`
        raise body_too_large()
    return raw


def whole_bodies(app: App) -> App:
    """ASGI middleware: an HTTP request without Content-Length reaches `app` with one.

    The body is gathered up to one byte past the limit; a longer one is cut there, so it still
    declares more than the limit and is refused as too large, and the rest is never held.
    """

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or any(name.lower() == b"content-length" for name, _ in scope["headers"]):
            await app(scope, receive, send)
            return
        cap = settings.COMMHUB_MAX_REQUEST_BYTES + 1
        chunks: list[bytes] = []
        size, more = 0, True
        while more and size < cap:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left before its body was complete: nothing to answer
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)[:cap]
        headers = [(name, value) for name, value in scope["headers"] if name.lower() != b"transfer-encoding"]
        headers.append((b"content-length", str(len(body)).encode("ascii")))
        await app({**scope, "headers": headers}, _replay(body, receive, unread=more), send)

    return middleware


def _replay(body: bytes, receive: Receive, *, unread: bool) -> Receive:
    """A `receive` that hands out the gathered body once, then passes on what the server sends."""
    given = False

    async def replayed() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        while True:
            message = await receive()
            # Past the cut, the rest of an over-long body is dropped: the app asked for no more.
            if not (unread and message["type"] == "http.request"):
                return message

    return replayed
