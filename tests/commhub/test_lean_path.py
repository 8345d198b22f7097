"""Agents' calls served ahead of Django's handler (commhub.lean: /mcp, REST with a bearer token)
are answered exactly as Django would: the same status, body and headers for the same request, the
production profile's redirect and HSTS included; and a client that disconnects stops a waiting
long-poll."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator
from django.core.handlers.asgi import ASGIHandler

from commhub.asgi import application
from commhub.logs import with_request_context
from tests.helpers.asgi import Answer, ask, scope

pytestmark = pytest.mark.django_db(transaction=True)  # the view's database work runs on pool threads


def both(request: dict[str, Any], body: Any) -> tuple[Answer, Answer]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    # One request id for both: each answer echoes it (commhub.logs wraps the whole application).
    sent = [(b"content-length", str(len(raw)).encode()), (b"x-request-id", b"same-request")]
    request = {**request, "headers": [*request["headers"], *sent]}
    fast = asyncio.run(ask(application, request, raw))
    # Made now: its middlewares read the settings now.
    django = asyncio.run(ask(with_request_context(ASGIHandler()), request, raw))
    return fast, django


def message(method: str, params: dict | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, **({"params": params} if params else {})}


@pytest.fixture
def bearer(make_actor, network) -> str:
    from hub_agents.services import token_create

    return f"Bearer {token_create(network=network, role='member', name='fast')[1]}"


@pytest.mark.parametrize(
    ("case", "build"),
    [
        ("tools/list", lambda bearer: (scope(authorization=bearer), message("tools/list"))),
        (
            "tools/call",
            lambda bearer: (
                scope(authorization=bearer),
                message("tools/call", {"name": "get_all_status", "arguments": {}}),
            ),
        ),
        ("no token", lambda bearer: (scope(), message("tools/call", {"name": "get_all_status", "arguments": {}}))),
        ("bad token", lambda bearer: (scope(authorization="Bearer ntok_nope"), message("tools/list"))),
        ("not json", lambda bearer: (scope(authorization=bearer), b"{nope")),
        ("GET", lambda bearer: (scope(method="GET"), b"")),
        ("foreign origin", lambda bearer: (scope(origin="https://evil.example"), message("tools/list"))),
        ("host not allowed", lambda bearer: (scope(host="evil.example"), message("tools/list"))),
        (
            "REST inbox",
            lambda bearer: (scope(method="GET", path="/api/v1/sessions/coder/inbox", authorization=bearer), b""),
        ),
        (
            "REST inbox, bad limit",
            lambda bearer: (
                scope(method="GET", path="/api/v1/sessions/coder/inbox", query="limit=0", authorization=bearer),
                b"",
            ),
        ),
        (
            "REST send (a second send: a repeat of the same request id)",
            lambda bearer: (
                scope(path="/api/v1/tasks", authorization=bearer),
                {"alias": "coder", "task": "t", "client_request_id": "same"},
            ),
        ),
        ("REST bad token", lambda bearer: (scope(method="GET", path="/api/v1/tasks", authorization="Bearer x"), b"")),
        ("REST unknown path", lambda bearer: (scope(method="GET", path="/api/v1/nothing", authorization=bearer), b"")),
        ("REST not json", lambda bearer: (scope(path="/api/v1/tasks", authorization=bearer), b"{nope")),
    ],
)
def test_the_fast_path_answers_exactly_as_django(bearer, case, build):
    request, body = build(bearer)
    if "repeat" in case:
        both(request, body)  # the first send: then both routes answer the repeat
    fast, django = both(request, body)

    assert (fast[0], fast[2]) == (django[0], django[2]), case
    if case == "host not allowed":
        # Django answers it from CommonMiddleware, inside X-Frame-Options' middleware and before
        # Content-Length is set: the fast path adds those two to the same 400.
        assert_more_headers(fast, django, {"content-length", "x-frame-options"})
    else:
        assert fast[1] == django[1], case


def assert_more_headers(fast: Answer, django: Answer, extra: set[str]) -> None:
    """Every header Django sends, with its value, and besides them only `extra`."""
    assert django[1].items() <= fast[1].items()
    assert set(fast[1]) - set(django[1]) <= extra


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_the_production_redirect_and_hsts_hold_on_the_fast_path(settings, bearer, scheme):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31_536_000
    fast, django = both(scope(authorization=bearer, scheme=scheme), message("tools/list"))

    assert fast[0] == django[0] == (301 if scheme == "http" else 200)
    if scheme == "http":  # Django redirects from its outermost middleware: the inner ones add nothing
        assert_more_headers(fast, django, {"content-length", "x-frame-options", "content-security-policy"})
    else:
        assert fast[1] == django[1]
    assert ("strict-transport-security" in fast[1]) == (scheme == "https")


def test_a_client_that_leaves_stops_its_long_poll(bearer):
    body = message("tools/call", {"name": "get_inbox", "arguments": {"alias": "coder", "wait_seconds": 30}})

    async def leave_while_waiting() -> None:
        talk = ApplicationCommunicator(application, scope(authorization=bearer))
        await talk.send_input({"type": "http.request", "body": json.dumps(body).encode(), "more_body": False})
        assert await talk.receive_nothing(timeout=1)  # waiting: no answer yet
        await talk.send_input({"type": "http.disconnect"})
        finished, _ = await asyncio.wait({talk.future}, timeout=5)  # (talk.wait(5) swallows its timeout)
        assert finished, "the app still waits after its client left"  # well before the 30 s wait's end

    asyncio.run(leave_while_waiting())
