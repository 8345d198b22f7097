"""Automatic retries: a failed attempt with attempts left is held (created, out of every inbox) for a
growing, jittered backoff and then delivered again; the last failure leaves the task failed and
dead-lettered. Every attempt keeps its own result.

Driven through the tools (tests/helpers/calls.py) on a frozen clock.
"""

from __future__ import annotations

import json
from datetime import timedelta
from functools import partial
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from hub_agents.services import membership_set, token_create
from hub_core.errors import HubError
from hub_tasks import limits
from hub_tasks.models import Task
from tests.helpers import moment, refused
from tests.helpers.calls import (
    ack_inbox,
    get_inbox,
    get_task,
    list_tasks,
    retry_task,
    send_ack,
    send_reply,
    send_task,
    send_task_id,
)

pytestmark = pytest.mark.usefixtures("clock")
CODER, LEAD = "coder", "lead"
BACKOFF = 10


send = partial(send_task_id, task="deploy the site")


def fail(agent, task_id: str, why: str) -> None:
    send_reply(actor=agent, alias=LEAD, text=why, in_reply_to=task_id, status="failed", from_session=CODER)


def coder_tasks(agent, task_id: str) -> list[dict[str, Any]]:
    return [m for m in get_inbox(actor=agent, alias=CODER)["messages"] if m["task_id"] == task_id]


def test_three_attempts_with_growing_delays_then_a_dead_letter(agent, clock):
    task_id = send(agent, max_attempts=3, retry_backoff_seconds=BACKOFF)
    delays = []
    for attempt, why in enumerate(["registry down", "disk full"], start=1):
        (message,) = coder_tasks(agent, task_id)
        ack_inbox(actor=agent, alias=CODER, message_id=message["id"])
        clock.tick(5)
        fail(agent, task_id, why)

        held = get_task(actor=agent, task_id=task_id)["task"]
        assert (held["status"], held["dead_lettered_at"]) == ("created", None)
        assert not coder_tasks(agent, task_id)  # held: in nobody's inbox
        row = Task.objects.get(pk=task_id)  # to the microsecond (get_task shows milliseconds)
        delay = row.retry_at - row.completed_at
        assert moment(held["retry_at"]) == row.retry_at.replace(microsecond=row.retry_at.microsecond // 1000 * 1000)
        delays.append(delay)

        clock.tick(delay - timedelta(microseconds=1))
        assert get_task(actor=agent, task_id=task_id)["task"]["status"] == "created"
        clock.tick(timedelta(microseconds=1))
        assert len(coder_tasks(agent, task_id)) == 1, f"attempt {attempt + 1} is delivered when due"
        assert get_task(actor=agent, task_id=task_id)["task"]["status"] == "delivered"

    # backoff * 2^(n-1), jittered within its upper half: each wait at least as long as the one before.
    assert timedelta(seconds=BACKOFF / 2) <= delays[0] <= timedelta(seconds=BACKOFF)
    assert timedelta(seconds=BACKOFF) <= delays[1] <= timedelta(seconds=BACKOFF * 2)

    clock.tick(5)
    fail(agent, task_id, "quota exceeded")
    found = get_task(actor=agent, task_id=task_id)

    assert found["task"]["status"] == "failed"
    assert found["task"]["dead_lettered_at"] is not None and found["task"]["retry_at"] is None
    assert found["task"]["attempt_count"] == 3 and found["task"]["max_attempts"] == 3
    assert [(a["number"], a["outcome"], a["result"]) for a in found["attempts"]] == [
        (1, "failed", "registry down"),
        (2, "failed", "disk full"),
        (3, "failed", "quota exceeded"),
    ]
    # A valid path through the table: failed -> created (backoff) -> delivered (release), twice.
    steps = [(e["from_status"], e["to_status"]) for e in found["events"]]
    assert steps == [(None, "delivered")] + [
        ("delivered", "acked"), ("acked", "failed"), ("failed", "created"), ("created", "delivered"),
    ] * 2 + [("delivered", "failed")]  # fmt: skip
    clock.tick(limits.RETRY_DELAY_MAX * 2)
    assert get_task(actor=agent, task_id=task_id)["task"]["status"] == "failed"  # no fourth attempt

    other = send(agent)  # failed without a retry policy: failed as ever, no dead letter
    fail(agent, other, "nope")
    listed = list_tasks(actor=agent, dead_letter=True)["tasks"]
    assert [row["task_id"] for row in listed] == [task_id]
    assert {row["task_id"] for row in list_tasks(actor=agent, status="failed")["tasks"]} == {task_id, other}


def test_a_failure_without_max_attempts_is_final_as_before(agent, clock):
    task_id = send(agent)
    fail(agent, task_id, "nope")
    clock.tick(limits.RETRY_DELAY_MAX * 2)
    found = get_task(actor=agent, task_id=task_id)
    assert found["task"]["status"] == "failed"
    assert (found["task"]["max_attempts"], found["task"]["dead_lettered_at"]) == (1, None)
    assert len(found["attempts"]) == 1


def test_a_task_failed_before_its_first_delivery_is_not_retried(agent, clock):
    """Failing a task still held for its dependency fails no attempt: it ends failed for good (nothing
    the hub gave up on, so no dead letter), what waits for it is cancelled, and it is never delivered
    ahead of the dependency it waited for."""
    first = send(agent)
    held = send(agent, max_attempts=3, retry_backoff_seconds=BACKOFF, depends_on=[first])
    after = send(agent, depends_on=[held])
    fail(agent, held, "not needed after all")
    clock.tick(BACKOFF * 10)
    found = get_task(actor=agent, task_id=held)
    assert (found["task"]["status"], found["task"]["retry_at"], found["task"]["dead_lettered_at"]) == (
        "failed",
        None,
        None,
    )
    assert found["attempts"] == [] and not coder_tasks(agent, held)
    assert get_task(actor=agent, task_id=after)["task"]["status"] == "cancelled"


def test_a_lost_lease_with_on_lost_fail_is_retried_after_the_backoff(agent, clock):
    task_id = send(agent, lease_seconds=60, on_lost="fail", max_attempts=2, retry_backoff_seconds=BACKOFF)
    send_ack(actor=agent, task_id=task_id, from_session=CODER)
    clock.tick(60)

    held = get_task(actor=agent, task_id=task_id)["task"]
    assert held["status"] == "created"
    clock.tick(BACKOFF)
    found = get_task(actor=agent, task_id=task_id)
    assert found["task"]["status"] == "delivered"
    assert [a["outcome"] for a in found["attempts"]] == ["lost", None]
    assert len(coder_tasks(agent, task_id)) == 1


def test_a_held_task_cannot_be_acked_early(agent, clock):
    task_id = send(agent, max_attempts=2)
    fail(agent, task_id, "flaky")
    refusal = refused(send_ack, actor=agent, task_id=task_id, from_session=CODER)
    assert isinstance(refusal, HubError) and refusal.code == "task_held"


def test_the_sweep_releases_a_held_retry_with_nobody_reading(agent, clock):
    task_id = send(agent, max_attempts=2, retry_backoff_seconds=BACKOFF)
    fail(agent, task_id, "flaky")
    clock.tick(BACKOFF)
    assert Task.objects.get(pk=task_id).status == "created"

    call_command("sweep", "--once", verbosity=0)

    assert Task.objects.get(pk=task_id).status == "delivered"


def test_retry_task_takes_a_dead_letter_back(agent, clock):
    task_id = send(agent, max_attempts=2, retry_backoff_seconds=BACKOFF)
    fail(agent, task_id, "one")
    clock.tick(BACKOFF)
    fail(agent, task_id, "two")
    assert get_task(actor=agent, task_id=task_id)["task"]["dead_lettered_at"] is not None

    retry_task(actor=agent, task_id=task_id, from_session=LEAD)

    assert get_task(actor=agent, task_id=task_id)["task"]["dead_lettered_at"] is None
    assert list_tasks(actor=agent, dead_letter=True)["tasks"] == []


@pytest.mark.parametrize(
    ("arguments", "wording"),
    [
        ({"max_attempts": 0}, "`max_attempts` and call again: it must be between 1 and 20"),
        ({"max_attempts": 21}, "`max_attempts` and call again: it must be between 1 and 20"),
        ({"retry_backoff_seconds": 0}, "`retry_backoff_seconds` and call again: it must be between 1 and 3600"),
    ],
)
def test_retry_arguments_are_checked(agent, arguments, wording):
    assert wording in refused(send_task, actor=agent, alias=CODER, task="t", **arguments).message


def test_the_dashboards_dead_letter_filter(agent, network, clock, django_user_model):
    dead = send(agent, max_attempts=2, retry_backoff_seconds=BACKOFF)
    fail(agent, dead, "one")
    clock.tick(BACKOFF)
    fail(agent, dead, "two")
    plain = send(agent)
    fail(agent, plain, "nope")
    user = django_user_model.objects.create_user("operator", password="pw")
    membership_set(user=user, network=network, role="owner")
    browser = Client()
    browser.force_login(user)

    listed = browser.get("/tasks/?dead_letter=1").content.decode()
    everything = browser.get("/tasks/").content.decode()

    assert f"/tasks/{dead}" in listed and f"/tasks/{plain}" not in listed
    assert f"/tasks/{dead}" in everything and f"/tasks/{plain}" in everything
    page = browser.get(f"/tasks/{dead}/").content.decode()
    assert "Dead letter" in page and "2 of 2" in page


@pytest.mark.django_db(transaction=True)
def test_the_new_arguments_over_rest_and_mcp(network, clock):
    _, token = token_create(network=network, role="member")
    client, headers = Client(), {"Authorization": f"Bearer {token}"}

    sent = client.post(
        "/api/v1/tasks",
        data=json.dumps({"alias": CODER, "task": "t", "max_attempts": 2, "retry_backoff_seconds": 5,
                         "lease_seconds": 90, "on_lost": "fail"}),
        content_type="application/json",
        headers=headers,
    ).json()  # fmt: skip
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "send_reply", "arguments": {
        "alias": LEAD, "text": "no", "in_reply_to": sent["task_id"], "status": "failed"}}}  # fmt: skip
    client.post("/mcp", data=json.dumps(body), content_type="application/json", headers=headers)
    clock.tick(5)
    body["params"]["arguments"]["text"] = "still no"
    client.post("/mcp", data=json.dumps(body), content_type="application/json", headers=headers)

    found = client.get(f"/api/v1/tasks/{sent['task_id']}", headers=headers).json()["task"]
    assert (found["lease_seconds"], found["on_lost"], found["max_attempts"]) == (90, "fail", 2)
    assert found["dead_lettered_at"] is not None
    listed = client.get("/api/v1/tasks?dead_letter=true", headers=headers).json()["tasks"]
    assert [row["task_id"] for row in listed] == [sent["task_id"]]
    assert client.get("/api/v1/tasks?dead_letter=false", headers=headers).json()["tasks"] == listed
