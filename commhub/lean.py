"""Agents' calls served ahead of Django's handler: /mcp, and REST calls with a bearer token.

Agents call the hub many times a second; Django's handler would spend more on each call than the
tool does (measured: ~3.5 ms of ~8 ms for a get_inbox): nine middlewares, each hopping to a
thread, and the request signals, each another hop. These calls need none of it: no session,
cookie, CSRF token, message or static file (a bearer-token REST call never consults the session:
hub_api's bearer authentication comes first and answers alone). So this app reads the body, builds
Django's own ASGIRequest, resolves the URL and runs the same view, with what the stack would still
do for these calls done inline, without a thread:

- the host check (ALLOWED_HOSTS, as CommonMiddleware's `get_host`), an exception answered as
  Django answers it (`response_for_exception`: DisallowedHost is a 400, anything else handler500);
- SecurityMiddleware (the production profile's HTTPS redirect and HSTS, nosniff, referrer and
  opener policies), XFrameOptionsMiddleware and the content security policy, applied through the
  middlewares' own methods, so an answer carries exactly the headers Django would add
  (tests/commhub/test_lean_path.py compares them);
- a sync view (DRF's) runs on the shared pool (hub_core.waiting.in_pool, which keeps connections
  fresh, so request_started has nothing to do), an async one (/mcp, the inbox's long-poll) on
  the loop; a client that disconnects cancels it, as Django's handler does;
- the answer is sent as Django's handler sends it: cookies as Set-Cookie, a streamed body (a file's
  too) through the response's own iterator, then response.close() on the pool (its closers, and
  request_finished).

Everything else (the dashboard, the admin, a REST call signed in by session) goes through Django.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import Any

from django.conf import settings
from django.core.handlers.asgi import ASGIHandler, ASGIRequest
from django.core.handlers.exception import response_for_exception
from django.http import FileResponse, HttpRequest, HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import resolve

from hub_core.bearer import says_bearer
from hub_core.headers import with_content_security_policy
from hub_core.waiting import in_pool

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

MCP_PATHS = frozenset({"/mcp", "/mcp/"})
API_PREFIX = "/api/v1/"


def is_lean(scope: Scope) -> bool:
    """/mcp, or a REST call that carries a bearer token."""
    path = scope["path"]
    if path in MCP_PATHS:
        return True
    return path.startswith(API_PREFIX) and any(
        name.lower() == b"authorization" and says_bearer(value.decode("latin-1")) for name, value in scope["headers"]
    )


def not_called(request: Any) -> Any:
    raise AssertionError("the middlewares' methods are called directly")


async def lean_app(scope: Scope, receive: Receive, send: Send) -> None:
    body = await _read_body(receive)
    if body is None:
        return  # the client left before its body was complete: nothing to answer
    request = ASGIRequest(scope, io.BytesIO(body))
    answer = asyncio.create_task(_serve(request, send))
    gone = asyncio.create_task(_disconnected(receive))
    await asyncio.wait({answer, gone}, return_when=asyncio.FIRST_COMPLETED)
    for task in (gone, answer):  # a disconnect cancels the answer (and a long-poll's wait)
        if not task.done():
            task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass


async def _read_body(receive: Receive) -> bytes | None:
    """The body, cut one byte past the size limit (hub_core.body.read_body refuses it there)."""
    cap = settings.COMMHUB_MAX_REQUEST_BYTES + 1
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        if size < cap:
            chunks.append(chunk[: cap - size])
        size += len(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _serve(request: ASGIRequest, send: Send) -> None:
    security = SecurityMiddleware(not_called)  # reads its settings when made: cheap, and overrides hold
    try:
        request.get_host()  # refuses a Host outside ALLOWED_HOSTS, as CommonMiddleware would
        response = security.process_request(request) or await _view_response(request)
    except Exception as exc:
        response = response_for_exception(request, exc)
    await _send(dressed(request, response, security), send)


def dressed(request: HttpRequest, response: HttpResponseBase, security: SecurityMiddleware) -> HttpResponseBase:
    """The answer with the headers the middlewares add (SecurityMiddleware's, X-Frame-Options, the CSP)."""
    response = security.process_response(request, response)
    response = XFrameOptionsMiddleware(not_called).process_response(request, response)
    return with_content_security_policy(response)


async def _view_response(request: HttpRequest) -> HttpResponseBase:
    """The URL's view's response, rendered (DRF's responses render late, as Django's handler does)."""
    match = resolve(request.path_info)
    request.resolver_match = match
    if asyncio.iscoroutinefunction(match.func):
        response = await match.func(request, *match.args, **match.kwargs)
    else:
        response = await in_pool(lambda: match.func(request, *match.args, **match.kwargs))
    if callable(getattr(response, "render", None)):
        response = response.render()  # DRF's JSON renderer: CPU only, no thread needed
    return response


async def _send(response: HttpResponseBase, send: Send) -> None:
    """The answer as Django's handler sends it (ASGIHandler.send_response): its cookies as Set-Cookie
    headers, a streamed one through the response's own iterator (sync or async: a file's too), closed
    however it ended; then response.close(), on the pool: it runs the response's closers (a file's
    close, a generator's), which may block, and sends request_finished, whose close_old_connections
    then closes what that pool thread holds, as in_pool does after every view."""
    try:
        if not response.streaming:
            await send_content(response, send)
            return
        headers = header_list(response)
        if isinstance(response, FileResponse):
            response.block_size = ASGIHandler.chunk_size  # the server cuts it into frames
        await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
        async with aclosing(aiter(response)) as content:  # a long-poll's progress events, then its answer
            async for chunk in content:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    finally:
        await in_pool(response.close)


def header_list(response: HttpResponseBase) -> list[tuple[bytes, bytes]]:
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in response.items()]
    headers += [
        (b"set-cookie", cookie.output(header="").encode("ascii").strip()) for cookie in response.cookies.values()
    ]
    return headers


async def send_content(response: HttpResponseBase, send: Send) -> None:
    """A response that is not streamed, sent as Django's handler sends it (its caller closes it)."""
    headers = header_list(response)
    body = response.content  # type: ignore[attr-defined]
    if "Content-Length" not in response:
        headers.append((b"content-length", str(len(body)).encode("ascii")))
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": body})
