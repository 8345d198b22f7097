"""Questions to a person through the tools: the agent holding a task asks (ask_operator), a person
answers once (answer_question), the answer reaches the agent's inbox as a reply about the task, and
get_task and list_questions show both. SSE round trip against a live hub: tests/hub_live/test_questions_live.py.
"""

from __future__ import annotations

import pytest

from hub_agents.models import AuditEntry
from hub_events.models import OPERATORS, Event
from tests.helpers import refused
from tests.helpers.calls import ack_inbox, cancel_task, get_inbox, get_task, reassign_task, send_task
from tests.helpers.calls import answer_question as answer
from tests.helpers.calls import ask_operator as ask
from tests.helpers.calls import list_questions as questions

LEAD, CODER = "lead", "coder"


@pytest.fixture
def task_id(agent) -> str:
    sent = send_task(actor=agent, alias=CODER, task="migrate the database", from_session=LEAD)["task_id"]
    ack_inbox(actor=agent, alias=CODER, message_id=sent)
    return sent


def test_a_question_and_its_answer_reach_the_agent_as_a_reply(agent, task_id):
    asked = ask(actor=agent, task_id=task_id, question="Drop the old table?", options=["yes", "no"])

    (waiting,) = questions(actor=agent, unanswered=True)["questions"]
    assert (waiting["question_id"], waiting["asked_by"], waiting["options"]) == (
        asked["question_id"],
        CODER,
        ["yes", "no"],
    )
    told = Event.objects.filter(type="question_asked", payload__question_id=asked["question_id"])
    assert sorted(told.values_list("audience", flat=True)) == sorted([OPERATORS, LEAD])

    answered = answer(actor=agent, question_id=asked["question_id"], answer="no: keep it a week")

    (reply,) = [m for m in get_inbox(actor=agent, alias=CODER)["messages"] if m["type"] == "reply"]
    assert (reply["id"], reply["content"], reply["task_id"]) == (answered["message_id"], "no: keep it a week", task_id)
    assert "Drop the old table?" in reply["context"]
    found = get_task(actor=agent, task_id=task_id)
    assert found["task"]["status"] == "acked"  # a question changes no status
    (row,) = found["questions"]
    assert (row["answer"], row["message_id"]) == ("no: keep it a week", answered["message_id"])
    assert row["answered_by"] == agent.label and row["answered_at"] is not None
    assert questions(actor=agent, unanswered=True)["questions"] == []
    assert AuditEntry.objects.filter(action="question.answered", target=f"task {task_id}").count() == 1


def test_a_question_is_answered_once(agent, task_id):
    asked = ask(actor=agent, task_id=task_id, question="Which region?")
    answer(actor=agent, question_id=asked["question_id"], answer="eu-west")

    again = refused(answer, actor=agent, question_id=asked["question_id"], answer="us-east")

    assert again.code == "question_answered" and again.extra["answered_by"] == agent.label
    assert [m["content"] for m in get_inbox(actor=agent, alias=CODER)["messages"] if m["type"] == "reply"] == [
        "eu-west"
    ]


def test_only_a_task_that_reached_its_agent_and_is_not_finished_takes_questions(agent, task_id):
    held = send_task(actor=agent, alias=CODER, task="later", not_before_seconds=600)["task_id"]
    assert refused(ask, actor=agent, task_id=held, question="?").code == "task_not_delivered"
    assert refused(ask, actor=agent, task_id="nope", question="?").code == "task_not_found"
    assert refused(answer, actor=agent, question_id="nope", answer="x").code == "question_not_found"


def test_another_network_neither_sees_nor_answers_a_question(agent, outsider, viewer, task_id):
    asked = ask(actor=agent, task_id=task_id, question="Deploy on Friday?")

    assert questions(actor=outsider)["questions"] == []
    assert refused(answer, actor=outsider, question_id=asked["question_id"], answer="yes").code == "question_not_found"
    assert refused(ask, actor=outsider, task_id=task_id, question="mine?").code == "task_not_found"
    assert refused(answer, actor=viewer, question_id=asked["question_id"], answer="yes").code == "permission_denied"
    assert questions(actor=viewer)["questions"][0]["answer"] is None


def test_a_task_reassigned_since_the_question_gets_the_answer_to_its_new_agent(agent, task_id):
    asked = ask(actor=agent, task_id=task_id, question="Keep the old schema?")
    reassign_task(actor=agent, task_id=task_id, new_alias="reviewer")

    answered = answer(actor=agent, question_id=asked["question_id"], answer="yes")

    (reply,) = [m for m in get_inbox(actor=agent, alias="reviewer")["messages"] if m["type"] == "reply"]
    assert reply["id"] == answered["message_id"] and reply["task_id"] == task_id
    assert not [m for m in get_inbox(actor=agent, alias=CODER)["messages"] if m["type"] == "reply"]


def test_a_question_of_a_finished_task_waits_for_nobody_and_takes_no_answer(agent, task_id):
    asked = ask(actor=agent, task_id=task_id, question="Which port?")
    cancel_task(actor=agent, task_id=task_id, reason="not needed")

    assert questions(actor=agent, unanswered=True)["questions"] == []
    late = refused(answer, actor=agent, question_id=asked["question_id"], answer="8080")
    assert late.code == "task_terminal"
    assert questions(actor=agent)["questions"][0]["answer"] is None  # still listed, unanswered


def test_the_task_history_records_a_question_and_its_answer(agent, task_id):
    asked = ask(actor=agent, task_id=task_id, question="Drop the old table?", options=["yes", "no"])
    answer(actor=agent, question_id=asked["question_id"], answer="no: keep it a week")

    events = get_task(actor=agent, task_id=task_id)["events"]

    *moves, question, answered = events
    assert [e["kind"] for e in moves] == ["status"] * len(moves)
    assert (question["kind"], question["question_id"], question["actor"]) == ("question", asked["question_id"], CODER)
    assert "Drop the old table?" in question["detail"] and "yes" in question["detail"]
    assert (answered["kind"], answered["question_id"], answered["actor"]) == (
        "answer",
        asked["question_id"],
        agent.label,
    )
    assert answered["detail"] == "no: keep it a week"
    # Neither changes the status: both name the status the task stayed in.
    assert {(e["from_status"], e["to_status"]) for e in (question, answered)} == {("acked", "acked")}


def test_a_refused_answer_writes_no_history(agent, task_id):
    asked = ask(actor=agent, task_id=task_id, question="Which region?")
    answer(actor=agent, question_id=asked["question_id"], answer="eu-west")
    before = get_task(actor=agent, task_id=task_id)["events"]

    refused(answer, actor=agent, question_id=asked["question_id"], answer="us-east")

    assert get_task(actor=agent, task_id=task_id)["events"] == before
