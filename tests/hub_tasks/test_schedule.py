"""Scheduled tasks: not_before (an ISO time) or not_before_seconds holds a task created, in no
inbox, until then; it is released lazily by the next read and by the sweep, and its TTL counts from
its release. On a frozen clock (tests/hub_tasks/conftest.py).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial

import pytest
from django.core.management import call_command

from hub_tasks import limits
from hub_tasks.models import Task
from tests.helpers import NOW, moment, refused
from tests.helpers.calls import get_inbox, get_task, list_tasks, send_reply, send_task_id

pytestmark = pytest.mark.usefixtures("clock")
LEAD, CODER = "lead", "coder"
TTL = 60


send = partial(send_task_id, task="nightly build")


def inbox_tasks(agent) -> list[str]:
    return [m["task_id"] for m in get_inbox(actor=agent, alias=CODER)["messages"]]


@pytest.mark.parametrize("when", ["seconds", "iso"])
def test_not_before_holds_the_task_and_releases_it_on_time(agent, clock, when):
    if when == "iso":
        task_id = send(agent, not_before=(NOW + timedelta(seconds=120)).isoformat(), ttl_seconds=TTL)
    else:
        task_id = send(agent, not_before_seconds=120, ttl_seconds=TTL)
    held = get_task(actor=agent, task_id=task_id)
    assert (held["task"]["status"], held["task"]["expires_at"], held["attempts"]) == ("created", None, [])
    assert inbox_tasks(agent) == []
    assert [row["task_id"] for row in list_tasks(actor=agent, blocked=True)["tasks"]] == [task_id]

    clock.tick(timedelta(seconds=120) - timedelta(microseconds=1))
    assert get_task(actor=agent, task_id=task_id)["task"]["status"] == "created"
    assert inbox_tasks(agent) == []
    clock.tick(timedelta(microseconds=1))
    assert inbox_tasks(agent) == [task_id], "released on time, by the next read"
    released = get_task(actor=agent, task_id=task_id)
    assert released["task"]["status"] == "delivered"
    assert [attempt["number"] for attempt in released["attempts"]] == [1]
    assert list_tasks(actor=agent, blocked=True)["tasks"] == []


def test_its_ttl_counts_from_its_release(agent, clock):
    task_id = send(agent, not_before_seconds=3 * TTL, ttl_seconds=TTL)
    clock.tick(3 * TTL)
    released_at = datetime.now().astimezone()
    row = get_task(actor=agent, task_id=task_id)["task"]
    assert row["status"] == "delivered"
    assert moment(row["expires_at"]) == released_at + timedelta(seconds=TTL)
    clock.tick(TTL - 1)
    assert get_task(actor=agent, task_id=task_id)["task"]["status"] == "delivered"
    clock.tick(1)
    assert get_task(actor=agent, task_id=task_id)["task"]["status"] == "expired"


def test_a_held_task_never_expires_while_it_waits(agent, clock):
    task_id = send(agent, not_before_seconds=limits.NOT_BEFORE_MAX, ttl_seconds=TTL)
    clock.tick(limits.NOT_BEFORE_MAX - 1)
    assert get_task(actor=agent, task_id=task_id)["task"]["status"] == "created"


def test_the_sweep_releases_it_with_nobody_reading(agent, clock):
    task_id = send(agent, not_before_seconds=30)
    clock.tick(30)
    call_command("sweep", "--once")
    # The row as stored: get_task would settle it itself.
    assert Task.objects.get(pk=task_id).status == "delivered"


def test_not_before_and_dependencies_both_hold_it(agent, clock):
    first = send(agent)
    task_id = send(agent, depends_on=[first], not_before_seconds=60)
    send_reply(actor=agent, alias=LEAD, text="ok", in_reply_to=first, from_session=CODER)
    assert get_task(actor=agent, task_id=task_id)["task"]["status"] == "created", "not before its time"
    clock.tick(60)
    assert task_id in inbox_tasks(agent)


def test_a_time_already_past_delivers_at_once(agent):
    task_id = send(agent, not_before_seconds=0)
    assert inbox_tasks(agent) == [task_id]


def test_not_before_is_checked(agent):
    too_far = limits.NOT_BEFORE_MAX + 1
    assert refused(send, agent, not_before_seconds=too_far).code == "invalid_argument"
    assert refused(send, agent, not_before="tomorrow").code == "invalid_argument"
    assert refused(send, agent, not_before=True).code == "invalid_argument"
    assert refused(send, agent, not_before=120).code == "invalid_argument"  # seconds: not_before_seconds


def test_given_both_the_later_holds(agent, clock):
    task_id = send(agent, not_before=(NOW + timedelta(seconds=600)).isoformat(), not_before_seconds=60)
    clock.tick(120)
    assert inbox_tasks(agent) == []
    clock.tick(481)
    assert inbox_tasks(agent) == [task_id]
