"""Chunked request bodies over real HTTP: /mcp and /api read them alike, under one size limit.

A chunked request (`Transfer-Encoding: chunked`) declares no Content-Length; httpx sends one for a
generator body. Both edges must read it whole, and refuse it with 413 past COMMHUB_MAX_REQUEST_BYTES.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from hub_tasks.models import Task
from tests.helpers.mcp import send_task_body

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 4096


def chunked(body: bytes, size: int = 1000) -> Iterator[bytes]:
    """The body as a generator: httpx sends it chunked, without Content-Length."""
    for start in range(0, len(body), size):
        yield body[start : start + size]


def post_chunked(url: str, body: bytes, token: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with httpx.Client(timeout=30) as client:
        request = client.build_request("POST", url, content=chunked(body), headers=headers)
        assert request.headers["Transfer-Encoding"] == "chunked" and "Content-Length" not in request.headers
        return client.send(request)


def rest_send_task(task: str) -> bytes:
    return json.dumps({"alias": "coder", "task": task}).encode()


def padded(make: Any, size: int) -> bytes:
    """A send_task body of exactly `size` bytes."""
    shell = make("")
    return make("x" * (size - len(shell)))


EDGES = {"rest": ("/api/v1/tasks", rest_send_task), "mcp": ("/mcp", send_task_body)}


@pytest.fixture
def hub(hub_server):
    return hub_server(env={"COMMHUB_MAX_REQUEST_BYTES": str(LIMIT)})


@pytest.mark.parametrize("edge", EDGES)
def test_a_small_chunked_body_is_read_whole(hub, agent_http, edge):
    path, make = EDGES[edge]

    reply = post_chunked(hub.url + path, make("review the chunked parser " * 60), agent_http.token)

    assert reply.status_code in (200, 201), reply.text
    outcome = reply.json() if edge == "rest" else json.loads(reply.json()["result"]["content"][0]["text"])
    assert outcome["ok"] is True, outcome
    assert Task.objects.get(pk=outcome["task_id"]).content == "review the chunked parser " * 60


@pytest.mark.parametrize("edge", EDGES)
def test_a_chunked_body_at_the_limit_is_accepted_and_one_byte_more_is_413(hub, agent_http, edge):
    path, make = EDGES[edge]

    at_limit = post_chunked(hub.url + path, padded(make, LIMIT), agent_http.token)
    over_limit = post_chunked(hub.url + path, padded(make, LIMIT + 1), agent_http.token)

    assert at_limit.status_code in (200, 201), at_limit.text
    assert over_limit.status_code == 413, over_limit.text
    assert over_limit.headers["Content-Type"].startswith("application/json")
    if edge == "rest":
        assert over_limit.json()["error"] == "request_too_large"
    else:
        assert over_limit.json()["error"]["code"] == -32600
    assert Task.objects.count() == 1


@pytest.mark.parametrize("edge", EDGES)
def test_a_chunked_body_far_over_the_limit_is_413_on_both_edges(hub, agent_http, edge):
    path, make = EDGES[edge]

    reply = post_chunked(hub.url + path, padded(make, 2 * 1024 * 1024), agent_http.token)

    assert reply.status_code == 413, reply.text[:500]
    assert str(LIMIT) in reply.text
    assert not Task.objects.exists()
