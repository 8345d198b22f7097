"""A tool's answer on /mcp, byte for byte: the JSON-RPC body is compact ASCII JSON, and its text part is
the result object as json.dumps writes it (spaces, characters unescaped), however the answer is put
together (hub_mcp.views._json, or the fast lane's own rendering)."""

from __future__ import annotations

import json

import pytest

from hub_agents.services import token_create
from tests.helpers.mcp import post, request

pytestmark = pytest.mark.django_db

# What encoders treat differently: non-ASCII, DEL (escaped only in ASCII JSON), a line separator,
# quotes, a backslash, a control character, and text shaped like a mark an encoder could splice on.
AWKWARD = 'ünï \x7f \u2028 "quoted" back\\slash \x01 "encoded:' + "ab" * 16 + '"'


def compact_ascii(value) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def get_all_status(id_: object) -> dict:
    return request("tools/call", {"name": "get_all_status", "arguments": {}}, id=id_)


@pytest.fixture
def token(network) -> str:
    return token_create(network=network, role="viewer", name="reader")[1]


@pytest.fixture
def sessions(online) -> None:
    online("coder", task=AWKWARD, output=AWKWARD, skills=["python"])
    online("lead", status="working", score=7.5)


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_the_answer_is_compact_ascii_and_its_text_is_the_result_as_written(client, token, sessions, version):
    reply = post(client, get_all_status(AWKWARD), version=version, token=token)

    body = json.loads(reply.content)
    assert reply.content == compact_ascii(body)
    assert body["id"] == AWKWARD
    result = body["result"]
    text = result["content"][0]["text"]
    outcome = json.loads(text)
    assert [row["task"] for row in outcome["sessions"]] == [AWKWARD, None]
    assert text == json.dumps(outcome, ensure_ascii=False)
    assert result.get("structuredContent", outcome) == outcome
    assert ("structuredContent" in result) is (version >= "2025-06-18")


def test_a_batch_puts_each_answer_in_its_place(client, token, sessions):
    calls = [get_all_status(1), request("ping", id=2), get_all_status(3)]
    reply = post(client, calls, version="2025-03-26", token=token)

    body = json.loads(reply.content)
    assert reply.content == compact_ascii(body)
    assert [answer["id"] for answer in body] == [1, 2, 3]
    first, second = body[0]["result"]["content"][0]["text"], body[2]["result"]["content"][0]["text"]
    assert first == second and AWKWARD in json.loads(first)["sessions"][0]["output"]
