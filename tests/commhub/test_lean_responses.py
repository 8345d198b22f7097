"""What the lean path (commhub.lean) sends besides status, headers and body, as Django's handler does
(issue 24): a response's cookies as Set-Cookie headers, a streamed or file response's content, and
response.close() once the answer is out, which runs the response's closers (a file's close) and sends
request_finished. The views are this module's own, at REST paths a bearer token sends down the lean
path."""

from __future__ import annotations

import asyncio
import io

import pytest
from django.core.handlers.asgi import ASGIHandler
from django.core.signals import request_finished
from django.http import FileResponse, JsonResponse, StreamingHttpResponse
from django.urls import path

from commhub.asgi import application
from commhub.lean import is_lean
from commhub.logs import with_request_context
from tests.helpers.asgi import ask, scope

pytestmark = [pytest.mark.urls(__name__), pytest.mark.django_db(transaction=True)]

opened: list[io.BytesIO] = []


def cookie_view(request):
    response = JsonResponse({"ok": True})
    response.set_cookie("seen", "yes", max_age=60, httponly=True, samesite="Strict")
    return response


def file_view(request):
    opened.append(io.BytesIO(b"line one\nline two\n" * 1000))
    return FileResponse(opened[-1], content_type="text/plain")


def stream_view(request):
    async def parts():
        for n in range(3):
            yield f"part {n}\n"

    return StreamingHttpResponse(parts(), content_type="text/plain")


urlpatterns = [
    path("api/v1/test-cookie", cookie_view),
    path("api/v1/test-file", file_view),
    path("api/v1/test-stream", stream_view),
]


def lean(path: str) -> dict:
    request = scope(method="GET", path=path, authorization="Bearer ntok_any")
    assert is_lean(request)
    return request


def test_a_cookie_a_view_sets_is_sent_as_djangos_handler_sends_it():
    request = lean("/api/v1/test-cookie")

    status, headers, body = asyncio.run(ask(application, request))
    _, django_headers, _ = asyncio.run(ask(with_request_context(ASGIHandler()), request))

    assert (status, body) == (200, b'{"ok": true}')
    assert headers["set-cookie"] == django_headers["set-cookie"]
    assert headers["set-cookie"].startswith("seen=yes;") and "HttpOnly" in headers["set-cookie"]


# Django's handler says so too: a file is read on a thread.
@pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume synchronous iterators")
def test_a_file_response_is_sent_whole_and_its_file_closed():
    opened.clear()

    status, headers, body = asyncio.run(ask(application, lean("/api/v1/test-file")))

    assert (status, headers["content-type"]) == (200, "text/plain")
    assert body == b"line one\nline two\n" * 1000
    assert opened[0].closed


def test_a_streamed_response_is_sent_and_the_request_is_finished_once():
    finished: list[object] = []

    def count(sender, **kwargs):
        finished.append(sender)

    request_finished.connect(count)
    try:
        status, _, body = asyncio.run(ask(application, lean("/api/v1/test-stream")))
        assert (status, body, len(finished)) == (200, b"part 0\npart 1\npart 2\n", 1)
        asyncio.run(ask(application, lean("/api/v1/test-cookie")))
        assert len(finished) == 2
    finally:
        request_finished.disconnect(count)
