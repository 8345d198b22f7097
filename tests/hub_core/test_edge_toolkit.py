"""One bearer parser for every transport, and long-poll reads that answer instead of raising."""

from __future__ import annotations

import asyncio
import json

import pytest

from hub_core.bearer import BEARER_HELP, bearer_token
from hub_core.errors import HubError
from hub_core.waiting import Pending, Poll, nothing_yet
from hub_tasks.selectors import inbox_pending


@pytest.mark.parametrize("header", [None, ""])
def test_no_header_is_no_token(header):
    assert bearer_token(header) is None


@pytest.mark.parametrize(("header", "token"), [("Bearer ntok_1", "ntok_1"), ("bearer   utok_2  ", "utok_2")])
def test_a_bearer_header_gives_its_token(header, token):
    assert bearer_token(header) == token


@pytest.mark.parametrize("header", ["Bearer", "Bearer    ", "Basic dXNlcjpwYXNz", "ntok_1"])
def test_a_header_that_is_not_a_bearer_token_is_refused_with_how_to_send_one(header):
    with pytest.raises(HubError) as refused:
        bearer_token(header)
    assert (refused.value.code, refused.value.status, refused.value.message) == ("unauthorized", 401, BEARER_HELP)


@pytest.mark.django_db
def test_every_transport_refuses_an_empty_bearer_header_in_the_same_words(client):
    """/mcp, /api and /events read the header through one parser, so they say the same thing."""
    mcp = client.post(
        "/mcp",
        data={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        content_type="application/json",
        HTTP_AUTHORIZATION="Bearer ",
    )
    api = client.get("/api/v1/tasks", HTTP_AUTHORIZATION="Bearer ")
    sse = client.get("/events/coder", HTTP_AUTHORIZATION="Bearer ")

    assert (mcp.status_code, api.status_code, sse.status_code) == (401, 401, 401)
    messages = {mcp.json()["error"]["message"], api.json()["message"], json.loads(sse.content)["message"]}
    assert messages == {BEARER_HELP}
    assert {mcp["WWW-Authenticate"], api["WWW-Authenticate"], sse["WWW-Authenticate"]} >= {'Bearer realm="commhub"'}


@pytest.mark.django_db(transaction=True)
def test_an_empty_inbox_under_a_poll_answers_and_the_poll_decides_to_wait(agent):
    """The read returns its empty result (no exception crosses it); the poll sets it aside and waits."""
    answered: list[list[dict]] = []

    def read() -> list[dict]:
        answered.append(inbox_pending(actor=agent, alias="coder", wait_seconds=30))
        return answered[-1]

    async def first_look() -> object:
        poll = Poll(read)
        try:
            return await poll.first()
        finally:
            await poll.close()

    outcome = asyncio.run(first_look())

    assert answered == [[]]
    assert isinstance(outcome, Pending) and outcome.total == pytest.approx(30, abs=5)


def test_nothing_yet_outside_a_poll_does_nothing():
    assert nothing_yet(groups=["feed.x.operators"], seconds=30) is None
