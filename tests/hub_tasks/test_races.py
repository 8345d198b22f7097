"""Concurrent callers on real connections: exactly one winner per transition, a consistent history.

On PostgreSQL these race row locks for real; on SQLite the same tests check that serialised
writers (BEGIN IMMEDIATE) reach the same outcomes.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from commhub.errors import HubError
from hub_agents.models import AgentSession
from hub_agents.services import session_report
from hub_tasks.models import Task, TaskEvent
from hub_tasks.services import completion_report, inbox_ack, task_cancel, task_reassign, task_send

pytestmark = pytest.mark.django_db(transaction=True)


def race(*calls: Callable[[], Any]) -> list[Any]:
    """Run the calls in parallel threads, released together; each result or HubError, in order."""
    barrier = threading.Barrier(len(calls))
    outcomes: list[Any] = [None] * len(calls)

    def run(index: int, call: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            outcomes[index] = call()
        except HubError as exc:
            outcomes[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes


def assert_history_consistent(task_id: str) -> None:
    task = Task.objects.get(pk=task_id)
    steps = list(TaskEvent.objects.filter(task_id=task_id).order_by("id").values_list("from_status", "to_status"))
    for (_, reached), (left, _) in itertools.pairwise(steps):
        assert left == reached, f"history jumps: {steps}"
    assert steps[-1][1] == task.status


@pytest.mark.parametrize("racers", [2, 8])
def test_concurrent_acks_of_one_message_have_one_winner(agent, racers):
    sent = task_send(actor=agent, alias="coder", task="build")
    outcomes = race(*[lambda: inbox_ack(actor=agent, alias="coder", message_id=sent["message_id"])] * racers)

    assert outcomes.count({"ok": True}) == 1
    losers = [o for o in outcomes if isinstance(o, HubError)]
    assert len(losers) == racers - 1
    assert {loser.error for loser in losers} == {"message not found or not yours"}
    assert TaskEvent.objects.filter(task_id=sent["task_id"], to_status="acked").count() == 1
    assert_history_consistent(sent["task_id"])


def test_concurrent_reassign_and_cancel_leave_one_consistent_state(agent):
    for _ in range(5):
        task_id = task_send(actor=agent, alias="coder", task="build")["task_id"]
        reassigned, cancelled = race(
            lambda task_id=task_id: task_reassign(actor=agent, task_id=task_id, new_alias="reviewer"),
            lambda task_id=task_id: task_cancel(actor=agent, task_id=task_id, reason="changed plans"),
        )

        task = Task.objects.get(pk=task_id)
        assert cancelled["cancelled"] is True  # cancel is allowed before and after a reassign
        assert task.status == "cancelled"
        if isinstance(reassigned, HubError):  # cancel won: the reassign saw a terminal task
            assert reassigned.error == "task is terminal (cancelled)"
            assert task.to_name == "coder"
        else:
            assert task.to_name == "reviewer"
        assert not task.inbox_messages.filter(acked_at__isnull=True).exists()
        assert_history_consistent(task.task_id)


def test_concurrent_sends_with_one_client_request_id_make_one_task(agent):
    outcomes = race(*[lambda: task_send(actor=agent, alias="coder", task="build", client_request_id="req-1")] * 12)

    assert len({outcome["task_id"] for outcome in outcomes}) == 1
    assert sum(1 for outcome in outcomes if not outcome.get("duplicate")) == 1
    assert Task.objects.filter(client_request_id="req-1").count() == 1


def test_a_completion_racing_a_working_heartbeat_never_deadlocks(agent):
    # report_status locks the alias's sessions, then tasks; report_completion must lock in the same order.
    for round_ in range(8):
        task_id = task_send(actor=agent, alias="coder", task=f"race {round_}")["task_id"]
        completed, reported = race(
            lambda task_id=task_id: completion_report(actor=agent, alias="coder", task=task_id, result="done"),
            lambda task_id=task_id: session_report(
                actor=agent, resume_id="r1", alias="coder", status="working", task=task_id
            ),
        )
        assert completed["ok"] and reported["ok"], (completed, reported)
        assert Task.objects.get(pk=task_id).status == "replied"
        assert_history_consistent(task_id)


def test_concurrent_first_heartbeats_of_one_session_make_one_row(agent):
    outcomes = race(*[lambda: session_report(actor=agent, resume_id="fresh", alias="coder", status="idle")] * 8)

    assert all(outcome["ok"] for outcome in outcomes), outcomes
    assert AgentSession.objects.filter(resume_id="fresh").count() == 1
