"""Leases: an acked or running task is its agent's while the agent keeps calling; when the agent goes
silent past the lease the hub applies the task's on_lost (requeue or fail), once, and tells the sender.

Driven through the tools (tests/helpers/calls.py) on a frozen clock; the sweep through its command.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from django.core.management import call_command

from hub_agents.models import LEASE_SECONDS_MAX
from hub_core.errors import HubError
from hub_events.models import OPERATORS, Event
from hub_tasks import limits
from hub_tasks.models import TRANSITIONS, InboxMessage, Move, Task, TaskEvent
from tests.helpers import refused
from tests.helpers.calls import (
    get_inbox,
    get_task,
    report_completion,
    report_status,
    send_ack,
    send_task,
    send_task_id,
)
from tests.helpers.tasks import take

pytestmark = pytest.mark.usefixtures("clock")
CODER, LEAD = "coder", "lead"
LEASE = 60


send = partial(send_task_id, task="port the parser")


def heartbeat(agent, **fields: Any) -> None:
    report_status(actor=agent, resume_id="resume-coder", alias=CODER, status=fields.pop("status", "working"), **fields)


def stored(task_id: str) -> Task:
    """The row as stored, without settling anything (the tools settle before they read)."""
    return Task.objects.get(pk=task_id)


def task_messages(alias: str, task_id: str, type: str) -> list[InboxMessage]:
    return list(InboxMessage.objects.filter(to_alias=alias, task_id=task_id, type=type).order_by("created_at", "id"))


def lease_moves(task_id: str) -> list[tuple[str, str]]:
    rows = TaskEvent.objects.filter(task_id=task_id, actor="hub").exclude(from_status="")
    return list(rows.order_by("id").values_list("from_status", "to_status"))


def lease_lost_events(task_id: str) -> list[tuple[list[str], dict[str, Any]]]:
    """The event log's lease_lost rows for the task (one per event: the operators' copy), with the
    aliases each was addressed to."""
    rows = Event.objects.filter(type="lease_lost", payload__task_id=task_id, audience=OPERATORS).order_by("id")
    return [(row.to, row.payload) for row in rows]


def test_a_silent_agents_task_is_requeued_to_it_once_its_lease_lapses(agent, clock):
    task_id = send(agent, lease_seconds=LEASE)
    take(agent, task_id)
    assert get_task(actor=agent, task_id=task_id)["task"]["lease_expires_at"] == "2026-04-12T10:01:00.000Z"

    clock.tick(LEASE - 1)
    assert get_task(actor=agent, task_id=task_id)["task"]["status"] == "acked"
    clock.tick(1)
    found = get_task(actor=agent, task_id=task_id)

    assert found["task"]["status"] == "delivered"
    assert found["task"]["lease_expires_at"] is None
    assert [(a["number"], a["outcome"], a["ended_by"]) for a in found["attempts"]] == [
        (1, "lost", "hub"),
        (2, None, None),
    ]
    assert found["task"]["attempt_count"] == 2
    # A new inbox row for the same agent: it is woken as for a new task, and can take it again.
    pending = [m for m in get_inbox(actor=agent, alias=CODER)["messages"] if m["task_id"] == task_id]
    assert len(pending) == 1 and pending[0]["id"] != task_id
    (notice,) = task_messages(LEAD, task_id, "notice")
    assert "silent past its lease of 60 s" in notice.content and "attempt 2" in notice.content

    # Its own event, to the sender and the agent: the agent went silent, not just "acked → delivered".
    assert lease_lost_events(task_id) == [
        (
            [LEAD, CODER],
            {"task_id": task_id, "to_name": CODER, "from_name": LEAD, "lease_seconds": LEASE,
             "outcome": "requeued", "retry_at": None, "message_id": notice.id},
        )
    ]  # fmt: skip

    clock.tick(LEASE * 10)  # delivered, not leased: nothing more happens until it is taken again
    get_task(actor=agent, task_id=task_id)
    assert lease_moves(task_id) == [("acked", "delivered")]
    assert len(task_messages(LEAD, task_id, "notice")) == 1
    assert len(lease_lost_events(task_id)) == 1


def test_with_on_lost_fail_a_silent_agents_task_fails(agent, clock):
    task_id = send(agent, lease_seconds=LEASE, on_lost="fail")
    take(agent, task_id)
    heartbeat(agent, status="working", task=task_id)  # running: leased as well
    assert stored(task_id).status == "running"

    clock.tick(LEASE)
    found = get_task(actor=agent, task_id=task_id)

    assert found["task"]["status"] == "failed"
    assert found["task"]["dead_lettered_at"] is None  # no automatic retries were asked for
    assert [(a["outcome"], a["result"]) for a in found["attempts"]] == [
        ("lost", "lease lost: coder was silent past its lease of 60 s")
    ]
    assert lease_moves(task_id) == [("running", "failed")]
    assert not [m for m in get_inbox(actor=agent, alias=CODER)["messages"] if m["task_id"] == task_id]
    (notice,) = task_messages(LEAD, task_id, "notice")
    assert notice.content.startswith(f"Task {task_id} to coder: coder was silent past its lease of 60 s; failed.")
    ((_, event),) = lease_lost_events(task_id)
    assert (event["outcome"], event["retry_at"], event["message_id"]) == ("failed", None, notice.id)


def test_a_lost_lease_with_attempts_left_announces_its_retry(agent, clock):
    task_id = send(agent, lease_seconds=LEASE, on_lost="fail", max_attempts=2, retry_backoff_seconds=10)
    take(agent, task_id)

    clock.tick(LEASE)
    found = get_task(actor=agent, task_id=task_id)["task"]

    assert found["status"] == "created"
    ((_, event),) = lease_lost_events(task_id)
    assert (event["outcome"], event["retry_at"]) == ("retry_scheduled", found["retry_at"])


@pytest.mark.parametrize(
    "call",
    [
        lambda agent, task_id: heartbeat(agent),
        lambda agent, task_id: heartbeat(agent, status="working", progress=50),
        lambda agent, task_id: get_inbox(actor=agent, alias=CODER),
        lambda agent, task_id: send_ack(actor=agent, task_id=task_id, from_session=CODER),
    ],
    ids=["heartbeat", "progress", "get_inbox", "send_ack"],
)
def test_any_call_by_the_agent_renews_its_lease(agent, clock, call):
    task_id = send(agent, lease_seconds=LEASE)
    take(agent, task_id)

    for _ in range(5):  # five minutes on a one-minute lease, calling every 50 s
        clock.tick(50)
        call(agent, task_id)
    found = get_task(actor=agent, task_id=task_id)["task"]
    assert (found["status"], found["lease_expires_at"]) == ("acked", "2026-04-12T10:05:10.000Z")  # last call + 60 s

    clock.tick(LEASE)  # then silence
    assert get_task(actor=agent, task_id=task_id)["task"]["status"] == "delivered"
    assert len(task_messages(LEAD, task_id, "notice")) == 1


def test_another_agents_calls_do_not_renew_the_lease(agent, clock):
    task_id = send(agent, lease_seconds=LEASE)
    take(agent, task_id)
    clock.tick(50)
    get_inbox(actor=agent, alias="someone-else")
    clock.tick(10)
    assert get_task(actor=agent, task_id=task_id)["task"]["status"] == "delivered"


def test_a_viewer_reading_the_agents_inbox_does_not_renew_its_lease(agent, viewer, clock):
    task_id = send(agent, lease_seconds=LEASE)
    take(agent, task_id)
    clock.tick(50)
    with pytest.raises(HubError) as refused:  # a viewer has no inbox: it never reads one, let alone renews
        get_inbox(actor=viewer, alias=CODER)
    assert refused.value.code == "alias_not_yours"
    clock.tick(10)
    assert get_task(actor=agent, task_id=task_id)["task"]["status"] == "delivered"


def test_a_completion_after_the_lease_lapsed_is_recorded_but_the_task_was_requeued(agent, clock):
    task_id = send(agent, lease_seconds=LEASE)
    take(agent, task_id)
    clock.tick(LEASE)
    answer = report_completion(actor=agent, alias=CODER, task=task_id, result="done")
    # The lapse came first (settled before the completion matched): the completion closes the
    # requeued attempt, as any completion of a delivered task does.
    assert answer["task_id"] == task_id
    found = get_task(actor=agent, task_id=task_id)
    assert found["task"]["status"] == "replied"
    assert [a["outcome"] for a in found["attempts"]] == ["lost", "replied"]


def test_without_a_lease_an_acked_task_waits_for_its_agent_as_before(agent, clock):
    task_id = send(agent)
    take(agent, task_id)
    clock.tick(limits.LEASE_MAX * 2)
    found = get_task(actor=agent, task_id=task_id)
    assert found["task"]["status"] == "acked"
    assert (found["task"]["lease_seconds"], found["task"]["lease_expires_at"]) == (None, None)
    assert not task_messages(LEAD, task_id, "notice")


def test_the_networks_default_lease_applies_unless_send_task_names_one(agent, network, clock):
    network.default_lease_seconds = 30
    network.save()
    by_default, named = send(agent), send(agent, lease_seconds=300)
    take(agent, by_default)
    take(agent, named)

    clock.tick(30)
    assert get_task(actor=agent, task_id=by_default)["task"]["status"] == "delivered"
    assert get_task(actor=agent, task_id=named)["task"]["status"] == "acked"


def test_the_sweep_settles_a_lapsed_lease_with_nobody_reading(agent, clock):
    task_id = send(agent, lease_seconds=LEASE)
    take(agent, task_id)
    clock.tick(LEASE)
    assert stored(task_id).status == "acked"  # nobody has looked yet

    call_command("sweep", "--once", verbosity=0)

    assert stored(task_id).status == "delivered"
    assert len(task_messages(LEAD, task_id, "notice")) == 1
    call_command("sweep", "--once", verbosity=0)
    assert lease_moves(task_id) == [("acked", "delivered")]


@pytest.mark.parametrize(
    ("arguments", "wording"),
    [
        ({"lease_seconds": 0}, "`lease_seconds` and call again: it must be between 1 and 86400"),
        ({"lease_seconds": limits.LEASE_MAX + 1}, "`lease_seconds` and call again: it must be between 1 and 86400"),
        ({"on_lost": "ignore"}, "`on_lost` and call again: it must be one of requeue, fail"),
    ],
)
def test_lease_arguments_are_checked(agent, arguments, wording):
    refusal = refused(send_task, actor=agent, alias=CODER, task="t", **arguments)
    assert isinstance(refusal, HubError)
    assert wording in refusal.message


def test_the_lease_limits_and_moves_agree():
    assert LEASE_SECONDS_MAX == limits.LEASE_MAX
    sources, targets = TRANSITIONS[Move.LEASE_LOST]
    assert sources == {"acked", "running"} and targets == {
        "delivered",
        "created",
        "failed",
    }  # created: back to the pool
