"""The server instructions (initialize, server/discover) name real tools with their real arguments:
an agent that follows them word for word is never refused for an argument that does not exist."""

from __future__ import annotations

import re

import pytest

from hub_tools.tools import TOOLS_BY_NAME
from tests.helpers.mcp import LATEST, rpc

pytestmark = pytest.mark.django_db

# A tool named in the instructions is written as a call: `name(argument, argument=value, ...)`.
CALL = re.compile(r"\b([a-z_]+)\(([^)]*)\)")


def instructions(client) -> str:
    reply = rpc(client, "initialize", {"protocolVersion": LATEST, "capabilities": {}, "clientInfo": {"name": "t"}})
    return reply.json()["result"]["instructions"]


def test_every_argument_the_instructions_name_is_an_argument_of_that_tool(client):
    text = instructions(client)
    calls = [(name, args) for name, args in CALL.findall(text) if name in TOOLS_BY_NAME]

    named = {name for name, _ in calls}
    assert {"report_status", "get_inbox", "ack_inbox", "report_completion", "send_task"} <= named, text
    for name, args in calls:
        for argument in re.findall(r"(?:^|,)\s*([a-z_]+)", args):
            assert argument in TOOLS_BY_NAME[name].params, f"{name}({args}): {argument!r} is not an argument of {name}"
    # Every tool the text names is written with its arguments: no bare "report_status with the task_id".
    bare = [word for word in re.findall(r"\b[a-z_]+\b(?!\()", text) if word in TOOLS_BY_NAME]
    assert bare == [], bare


def test_the_instructions_say_how_a_sender_gets_its_replies(client):
    text = instructions(client)

    assert "from_session" in text
    assert re.search(r"from_session[^.]*your own alias", text), text
    assert '"hub"' in text  # the sender without it
