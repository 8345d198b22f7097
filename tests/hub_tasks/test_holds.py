"""A hold on the work outlives reassign_task and retry_task: a task waiting for its dependencies or
its not_before keeps waiting (a reassign changes who does the work, not when; a retry does not skip
work still running), and its release delivers it, once, to the agent it is with then.

Driven through the tools (tests/helpers/calls.py), on a frozen clock.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.calls import (
    cancel_task,
    get_inbox,
    get_task,
    reassign_task,
    retry_task,
    send_task_id,
)
from tests.helpers.tasks import reply

pytestmark = pytest.mark.usefixtures("clock")
LEAD, CODER, TESTER = "lead", "coder", "tester"


def inbox_tasks(agent, alias: str) -> list[str]:
    return [m["task_id"] for m in get_inbox(actor=agent, alias=alias, limit=100)["messages"]]


def task(agent, task_id: str) -> dict[str, Any]:
    return get_task(actor=agent, task_id=task_id)["task"]


def test_a_task_reassigned_while_it_waits_for_a_dependency_waits_then_reaches_its_new_agent(agent):
    first = send_task_id(agent, "build")
    second = send_task_id(agent, "deploy", depends_on=[first])

    moved = reassign_task(actor=agent, task_id=second, new_alias=TESTER, from_session=LEAD)

    assert moved["message_id"] == second  # its release's row, as send_task's answer names it
    held = task(agent, second)
    assert (held["status"], held["to_name"], held["dependencies_pending"]) == ("created", TESTER, 1)
    assert second not in inbox_tasks(agent, TESTER) + inbox_tasks(agent, CODER)

    reply(agent, first)

    assert inbox_tasks(agent, TESTER) == [second]
    assert second not in inbox_tasks(agent, CODER)
    released = task(agent, second)
    assert (released["status"], released["to_name"]) == ("delivered", TESTER)
    assert [a["alias"] for a in get_task(actor=agent, task_id=second)["attempts"]] == [TESTER]


def test_a_scheduled_task_reassigned_keeps_its_not_before(agent, clock):
    scheduled = send_task_id(agent, "nightly", not_before_seconds=120)

    reassign_task(actor=agent, task_id=scheduled, new_alias=TESTER)
    clock.tick(119)

    assert task(agent, scheduled)["status"] == "created"
    assert inbox_tasks(agent, TESTER) == []
    clock.tick(1)
    assert inbox_tasks(agent, TESTER) == [scheduled]


def test_a_task_cancelled_while_waiting_and_retried_waits_again_for_the_work_still_running(agent):
    first = send_task_id(agent, "build")
    second = send_task_id(agent, "deploy", depends_on=[first])
    cancel_task(actor=agent, task_id=second, reason="wrong order")

    retried = retry_task(actor=agent, task_id=second, from_session=LEAD)

    assert retried["message_id"] == second
    held = task(agent, second)
    assert (held["status"], held["dependencies_pending"], held["expires_at"]) == ("created", 1, None)
    assert inbox_tasks(agent, CODER) == [first]

    reply(agent, first)

    assert inbox_tasks(agent, CODER) == [second]
    assert task(agent, second)["status"] == "delivered"


def test_a_task_cancelled_by_its_failed_dependency_and_retried_runs_now(agent):
    # A person retrying it has decided the failure no longer matters: nothing is still running.
    first = send_task_id(agent, "build")
    second = send_task_id(agent, "deploy", depends_on=[first])
    reply(agent, first, status="failed")
    assert task(agent, second)["status"] == "cancelled"

    retried = retry_task(actor=agent, task_id=second)

    assert task(agent, second)["status"] == "delivered"
    assert retried["message_id"] in {m["id"] for m in get_inbox(actor=agent, alias=CODER)["messages"]}


def test_a_scheduled_task_cancelled_and_retried_still_waits_for_its_time(agent, clock):
    scheduled = send_task_id(agent, "nightly", not_before_seconds=300)
    cancel_task(actor=agent, task_id=scheduled)

    retry_task(actor=agent, task_id=scheduled)
    clock.tick(299)

    assert task(agent, scheduled)["status"] == "created"
    clock.tick(1)
    assert inbox_tasks(agent, CODER) == [scheduled]
