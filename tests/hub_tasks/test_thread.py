"""A thread per task (get_thread): everything said about a task, in order, for whoever picks it up."""

from __future__ import annotations

from hub_tasks.models import InboxMessage
from tests.helpers import refused
from tests.helpers.calls import (
    ack_inbox,
    answer_question,
    ask_operator,
    get_thread,
    report_completion,
    send_reply,
    send_task,
)

LEAD, CODER, HELPER = "lead", "coder", "helper"


def test_a_thread_holds_every_kind_of_message_about_its_task_in_order(agent, clock):
    task_id = send_task(actor=agent, alias=CODER, task="port the parser", context="see #12", from_session=LEAD)[
        "task_id"
    ]
    ack_inbox(actor=agent, alias=CODER, message_id=task_id)
    clock.tick(1)
    asked = ask_operator(actor=agent, task_id=task_id, question="Keep the old API?", options=["yes", "no"])
    clock.tick(1)
    answered = answer_question(actor=agent, question_id=asked["question_id"], answer="yes, for a release")
    clock.tick(1)
    child = send_task(actor=agent, alias=HELPER, task="port the tests", from_session=CODER, parent_task_id=task_id)[
        "task_id"
    ]
    clock.tick(1)
    report_completion(actor=agent, alias=HELPER, task=child, result="tests ported")
    clock.tick(1)
    note = send_reply(actor=agent, alias=LEAD, text="halfway there", in_reply_to=task_id, from_session=CODER)
    clock.tick(1)
    done = report_completion(actor=agent, alias=CODER, task=task_id, result="parser ported")
    # Noise that is not about this task: none of it may show.
    send_task(actor=agent, alias=CODER, task="another task", from_session=LEAD)

    thread = get_thread(actor=agent, task_id=task_id)

    assert thread["task_id"] == task_id
    kinds = [(entry["kind"], entry.get("type")) for entry in thread["entries"]]
    assert kinds == [
        ("task", None),
        ("question", None),
        ("answer", None),
        ("message", InboxMessage.Type.CHAINED_REPLY),
        ("message", InboxMessage.Type.REPLY),
        ("completion", None),
    ]
    first, question, answer, chained, reply, completion = thread["entries"]
    assert (first["from"], first["to"], first["content"], first["context"]) == (
        LEAD,
        CODER,
        "port the parser",
        "see #12",
    )
    assert (question["id"], question["from"], question["options"]) == (asked["question_id"], CODER, ["yes", "no"])
    assert (answer["id"], answer["content"], answer["question_id"]) == (
        answered["message_id"],
        "yes, for a release",
        asked["question_id"],
    )
    assert (answer["from"], answer["to"]) == (agent.label, CODER)
    assert (chained["from"], chained["to"], chained["content"]) == (HELPER, LEAD, "tests ported")
    assert (reply["id"], reply["from"], reply["to"], reply["content"]) == (
        note["message_id"],
        CODER,
        LEAD,
        "halfway there",
    )
    assert (completion["id"], completion["from"], completion["content"]) == (
        done["completion_id"],
        CODER,
        "parser ported",
    )
    times = [entry["at"] for entry in thread["entries"]]
    assert times == sorted(times)


def test_entries_within_one_millisecond_keep_the_order_they_were_written_in(agent, clock):
    """`at` shows milliseconds; the thread is ordered by the stored microseconds, so a second question
    asked 200 µs after the first one's answer comes after it (a question's kind sorts before an
    answer's only when both share the microsecond)."""
    task_id = send_task(actor=agent, alias=CODER, task="port the parser", from_session=LEAD)["task_id"]
    ack_inbox(actor=agent, alias=CODER, message_id=task_id)
    clock.tick(1)
    first = ask_operator(actor=agent, task_id=task_id, question="Keep the old API?")
    clock.tick(1)
    answered = answer_question(actor=agent, question_id=first["question_id"], answer="yes")
    clock.tick(0.0002)
    second = ask_operator(actor=agent, task_id=task_id, question="For how long?")

    entries = get_thread(actor=agent, task_id=task_id)["entries"]

    ids = [entry["id"] for entry in entries]
    assert ids == [task_id, first["question_id"], answered["message_id"], second["question_id"]]
    assert entries[2]["at"] == entries[3]["at"]  # one millisecond, as shown


def test_a_fresh_task_is_a_thread_of_one(agent):
    task_id = send_task(actor=agent, alias=CODER, task="just sent")["task_id"]

    (only,) = get_thread(actor=agent, task_id=task_id)["entries"]

    assert (only["kind"], only["id"], only["content"]) == ("task", task_id, "just sent")


def test_another_networks_thread_is_not_found(agent, outsider):
    task_id = send_task(actor=agent, alias=CODER, task="private")["task_id"]

    missing = refused(get_thread, actor=outsider, task_id=task_id)

    assert (missing.code, missing.status) == ("task_not_found", 404)
