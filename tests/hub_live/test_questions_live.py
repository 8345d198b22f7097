"""A question and its answer round-trip to an agent over SSE, against a live hub (issue 17): the
agent asks over MCP, the operators' feed and the sender's stream hear the question, a person
answers over REST, and the agent's own /events stream pushes the answer as a reply about the task."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from hub_events.selectors import events_position
from tests.helpers.live import rest, sse_events

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_question_and_its_answer_round_trip_over_sse(hub_server, agent_http, network):
    hub = hub_server()
    sent = rest(hub, agent_http, "POST", "/tasks", json={"alias": "coder", "task": "migrate", "from_session": "lead"})
    agent_http.mcp(hub, "send_ack", task_id=sent["task_id"], from_session="coder")
    start = events_position(network_id=network.id)
    asked: dict[str, Any] = {}

    def ask() -> None:
        asked.update(agent_http.mcp(hub, "ask_operator", task_id=sent["task_id"], question="Drop the old table?",
                                    options=["yes", "no"]))  # fmt: skip

    sender_stream = sse_events(hub, agent_http, "lead", last_event_id=start)
    asker = threading.Thread(target=ask, daemon=True)
    asker.start()
    question = next(frame for _, kind, frame in sender_stream if kind == "question_asked")
    sender_stream.close()
    asker.join(timeout=30)
    assert asked["ok"] and question["payload"]["question_id"] == asked["question_id"]
    assert (question["payload"]["question"], question["payload"]["options"]) == ("Drop the old table?", ["yes", "no"])

    agent_stream = sse_events(hub, agent_http, "coder", last_event_id=events_position(network_id=network.id))
    answered: dict[str, Any] = {}
    answerer = threading.Thread(
        target=lambda: answered.update(
            rest(hub, agent_http, "POST", f"/questions/{asked['question_id']}/answer", json={"answer": "no"})
        ),
        daemon=True,
    )
    answerer.start()
    reply = next(frame for _, kind, frame in agent_stream if kind == "new_reply")
    agent_stream.close()
    answerer.join(timeout=30)

    assert answered["ok"] and reply["payload"]["message_id"] == answered["message_id"]
    assert (reply["payload"]["content"], reply["payload"]["task_id"]) == ("no", sent["task_id"])
    (row,) = rest(hub, agent_http, "GET", f"/questions?task_id={sent['task_id']}")["questions"]
    assert (row["answer"], row["message_id"]) == ("no", answered["message_id"])
