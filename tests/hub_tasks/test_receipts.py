"""Delivery receipts through the tools: get_inbox records when each message first reached its agent and
how, a task when its agent first read it (once, never moved), get_task and the task page show them.

SSE and long-poll readers against a live hub: tests/hub_live/test_receipts_live.py.
"""

from __future__ import annotations

from functools import partial

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from hub_agents.services import membership_set
from hub_core.errors import HubError
from hub_tasks.models import InboxMessage
from tests.helpers.calls import (
    ack_inbox,
    get_inbox,
    get_task,
    reassign_task,
    send_ack,
    send_message,
    send_task_id,
)
from tests.helpers.dashboard import browser_of

pytestmark = pytest.mark.usefixtures("clock")
CODER, LEAD = "coder", "lead"


send = partial(send_task_id, task="port the parser")


def first_read(agent, task_id: str) -> str | None:
    return get_task(actor=agent, task_id=task_id)["task"]["first_read_at"]


def test_a_plain_get_inbox_records_the_first_delivery_and_never_moves_it(agent, clock):
    task_id = send(agent)
    assert first_read(agent, task_id) is None

    clock.tick(5)
    (row,) = get_inbox(actor=agent, alias=CODER)["messages"]
    read_at = row["delivered_at"]
    clock.tick(60)
    (again,) = get_inbox(actor=agent, alias=CODER)["messages"]

    assert read_at is not None and read_at.startswith("2026-04-12T10:00:05")
    assert (row["delivered_via"], again["delivered_at"], again["delivered_via"]) == ("get_inbox", read_at, "get_inbox")
    assert first_read(agent, task_id) == read_at


def test_first_read_at_stays_when_the_task_is_read_again_elsewhere(agent, clock):
    task_id = send(agent)
    clock.tick(5)
    get_inbox(actor=agent, alias=CODER)
    read_at = first_read(agent, task_id)

    clock.tick(60)
    reassign_task(actor=agent, task_id=task_id, new_alias="reviewer")
    (row,) = get_inbox(actor=agent, alias="reviewer")["messages"]

    assert row["delivered_at"].startswith("2026-04-12T10:01:05"), "the new message has its own receipt"
    assert first_read(agent, task_id) == read_at


def test_a_notice_about_a_task_read_by_its_sender_is_not_the_task_read(agent, clock):
    task_id = send(agent, ttl_seconds=10)
    clock.tick(11)

    notices = get_inbox(actor=agent, alias=LEAD)["messages"]

    assert [(m["type"], m["task_id"]) for m in notices] == [("notice", task_id)]
    assert notices[0]["delivered_at"] is not None
    assert first_read(agent, task_id) is None


def test_a_viewer_naming_the_agent_reads_nothing_and_marks_nothing(agent, viewer):
    task_id = send(agent)

    with pytest.raises(HubError) as refused:
        get_inbox(actor=viewer, alias=CODER)

    assert refused.value.code == "alias_not_yours"
    assert first_read(agent, task_id) is None
    assert get_inbox(actor=agent, alias=CODER)["messages"][0]["delivered_at"] is not None


def test_receipts_cost_two_updates_on_first_delivery_and_none_on_a_repeat(agent):
    send(agent)
    send(agent)
    send_message(actor=agent, alias=CODER, message="fyi")

    with CaptureQueriesContext(connection) as first:
        assert len(get_inbox(actor=agent, alias=CODER)["messages"]) == 3
    with CaptureQueriesContext(connection) as repeat:
        get_inbox(actor=agent, alias=CODER)

    def updates(queries: CaptureQueriesContext) -> list[str]:
        return [
            q["sql"].split(" SET ")[0].replace('"', "")
            for q in queries.captured_queries
            if q["sql"].startswith("UPDATE")
        ]

    # Tasks before their inbox rows: the lock order of every write (the reverse deadlocked a cancel).
    assert updates(first) == ["UPDATE hub_tasks_task", "UPDATE hub_tasks_inboxmessage"]
    assert updates(repeat) == []


def test_acked_and_first_read_show_in_get_task_and_on_the_task_page(agent, network, django_user_model):
    task_id = send(agent)
    (message,) = get_inbox(actor=agent, alias=CODER)["messages"]
    ack_inbox(actor=agent, alias=CODER, message_id=message["id"])
    operator = django_user_model.objects.create_user("operator", password="pw")
    membership_set(user=operator, network=network, role="viewer")

    found = get_task(actor=agent, task_id=task_id)
    page = browser_of(operator).get(f"/tasks/{task_id}/").content.decode()

    assert found["task"]["first_read_at"] == message["delivered_at"]
    assert found["attempts"][0]["acked_at"] is not None
    assert "First read" in page and "not yet" not in page
    assert " · acked <time" in page


def test_the_task_page_says_when_the_agent_has_not_read_it_yet(agent, network, django_user_model):
    task_id = send(agent)
    operator = django_user_model.objects.create_user("operator", password="pw")
    membership_set(user=operator, network=network, role="viewer")

    page = browser_of(operator).get(f"/tasks/{task_id}/").content.decode()

    assert "not yet: the agent has not fetched it" in page


def test_an_ack_by_id_without_a_read_is_a_receipt_too(agent, clock):
    # The message id of a task's first delivery is its task id: an agent told it can ack unread.
    task_id = send(agent)
    clock.tick(5)

    ack_inbox(actor=agent, alias=CODER, message_id=task_id)

    message = InboxMessage.objects.get(pk=task_id)
    assert (message.delivered_via, message.delivered_to_agent_at) == ("ack_inbox", message.acked_at)
    assert first_read(agent, task_id).startswith("2026-04-12T10:00:05")


def test_an_ack_keeps_the_receipt_of_the_read_before_it(agent, clock):
    task_id = send(agent)
    get_inbox(actor=agent, alias=CODER)
    clock.tick(5)

    ack_inbox(actor=agent, alias=CODER, message_id=task_id)

    message = InboxMessage.objects.get(pk=task_id)
    assert message.delivered_via == "get_inbox" and message.delivered_to_agent_at < message.acked_at


def test_send_ack_marks_the_task_read(agent, clock):
    task_id = send(agent)
    clock.tick(5)

    send_ack(actor=agent, task_id=task_id, from_session=CODER)

    assert first_read(agent, task_id).startswith("2026-04-12T10:00:05")
