"""`stats` (tasks by status) summed from count rows that database triggers keep in step (issue 15).

list_tasks and the dashboard read TaskCount instead of counting the task table. Whatever writes a
task (every tool, an expiry, a bulk insert, a raw update, a delete), the counts must equal a count of
the tasks, in the order and shape `stats` has always had; and so must the network's earliest
deadline stay at or before every waiting task's.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.models import Count, Min
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from freezegun.api import FrozenDateTimeFactory
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from hub_agents.actors import Actor
from hub_agents.models import Network
from hub_agents.services import network_delete
from hub_core.errors import HubError
from hub_tasks import counts
from hub_tasks.counts import counts_fold
from hub_tasks.models import ACTIVE, TERMINAL, WAITING, Task, TaskCount, TaskDeadline
from hub_tasks.selectors import task_page
from tests.helpers.calls import (
    ack_inbox,
    cancel_task,
    get_inbox,
    list_tasks,
    reassign_task,
    report_completion,
    report_status,
    retry_task,
    send_ack,
    send_reply,
    send_task,
)
from tests.helpers.hostile import FUZZ
from tests.helpers.races import race

ALIASES = ("coder", "tester")
Op = Callable[[int], None]


def counted(network: Network) -> list[dict[str, Any]]:
    """`stats` as it was computed before the counts: a GROUP BY over the network's tasks."""
    tasks = Task.objects.filter(network=network).values("status").annotate(count=Count("pk"))
    return list(tasks.order_by("-count", "status"))


def assert_in_step(agent: Actor, network: Network) -> None:
    assert list_tasks(actor=agent)["stats"] == counted(network)
    _, stats = task_page(actor=agent, network_id=network.id)
    assert stats == sorted(counted(network), key=lambda row: row["status"])
    waiting = Task.objects.filter(network=network, status__in=WAITING).aggregate(earliest=Min("expires_at"))
    due = TaskDeadline.objects.filter(network=network).values_list("due_at", flat=True).first()
    if waiting["earliest"] is not None:  # never later than a waiting task's deadline
        assert due is not None and due <= waiting["earliest"]


# --- every way a task's status changes, in any order ---------------------------------------------


def _ops(agent: Actor, network: Network, clock: FrozenDateTimeFactory, tasks: list[str]) -> dict[str, Op]:
    """Each step's operation, given a number to choose with: which task, alias, TTL or outcome."""

    def send(n: int) -> None:
        ttl = (1, 30, 3600)[n % 3]
        answer = send_task(actor=agent, alias=ALIASES[n % 2], task=f"job {n}", from_session="lead", ttl_seconds=ttl)
        tasks.append(answer["task_id"])

    def ack(n: int) -> None:
        alias = ALIASES[n % 2]
        messages = [m for m in get_inbox(actor=agent, alias=alias, limit=100)["messages"] if m["type"] == "task"]
        if messages:
            ack_inbox(actor=agent, alias=alias, message_id=messages[n % len(messages)]["id"])

    def time_passes(n: int) -> None:
        clock.tick((1, 29, 3599)[n % 3])
        list_tasks(actor=agent)  # a look settles what fell due

    def delete(task_id: str, n: int) -> None:  # as the admin may
        Task.objects.filter(pk=task_id).delete()
        tasks.remove(task_id)

    def holder(task_id: str) -> str:
        return Task.objects.get(pk=task_id).to_name

    def start(task_id: str, n: int) -> None:
        alias = holder(task_id)
        report_status(actor=agent, resume_id=f"r-{alias}", alias=alias, status="working", task=task_id)

    def reply(task_id: str, n: int) -> None:
        outcome = ("replied", "failed", "cancelled")[n % 3]
        send_reply(actor=agent, alias="lead", text="r", in_reply_to=task_id, status=outcome)

    def on_a_task(call: Callable[[str, int], Any], statuses: Iterable[str] = ()) -> Op:
        """`call` on one of the tasks, mostly one whose status allows the move (else any)."""

        def op(n: int) -> None:
            fitting = Task.objects.filter(pk__in=tasks, status__in=statuses).order_by("pk")
            pool = list(fitting.values_list("pk", flat=True)) if n % 4 else tasks
            if pool:
                call(pool[n % len(pool)], n)

        return op

    return {
        "send": send,
        "ack_inbox": ack,
        "send_ack": on_a_task(lambda task_id, n: send_ack(actor=agent, task_id=task_id), ACTIVE),
        "start": on_a_task(start, ACTIVE),
        "complete": on_a_task(
            lambda task_id, n: report_completion(actor=agent, alias=holder(task_id), task=task_id, result="done"),
            ACTIVE,
        ),
        "reply": on_a_task(reply, ACTIVE),
        "cancel": on_a_task(lambda task_id, n: cancel_task(actor=agent, task_id=task_id), ACTIVE),
        "reassign": on_a_task(
            lambda task_id, n: reassign_task(actor=agent, task_id=task_id, new_alias=ALIASES[n % 2]), ACTIVE
        ),
        "retry": on_a_task(lambda task_id, n: retry_task(actor=agent, task_id=task_id), TERMINAL),
        "time_passes": time_passes,
        # As tests and scripts do: a raw update the tools never make.
        "raw_created": on_a_task(
            lambda task_id, n: Task.objects.filter(pk=task_id, status="delivered").update(status="created"),
            WAITING,
        ),
        "delete": on_a_task(delete),
        "fold": lambda n: counts_fold(network.id),
    }


OPS = (
    "send", "ack_inbox", "send_ack", "start", "complete", "reply", "cancel", "reassign", "retry",
    "time_passes", "raw_created", "delete", "fold",
)  # fmt: skip


@pytest.mark.usefixtures("unlimited")
@hypothesis_settings(FUZZ, max_examples=60)
@given(steps=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 50)), min_size=1, max_size=25))
def test_the_counts_equal_a_count_of_the_tasks_after_any_mix_of_changes(agent, network, clock, steps):
    tasks = list(Task.objects.filter(network=network).values_list("pk", flat=True))  # earlier examples' tasks
    ops = _ops(agent, network, clock, tasks)
    for op, n in steps:
        try:
            ops[op](n)
        except HubError:
            pass  # a refused move (a finished task, an empty inbox...) changes nothing, as it should
        assert_in_step(agent, network)


# --- reading ----------------------------------------------------------------------------------------


def test_stats_are_summed_from_the_counts_not_counted_over_the_tasks(agent, network):
    for n in range(3):
        send_task(actor=agent, alias="coder", task=f"t{n}")
    list_tasks(actor=agent)

    with CaptureQueriesContext(connection) as captured:
        stats = list_tasks(actor=agent)["stats"]

    grouped = [q["sql"] for q in captured.captured_queries if "GROUP BY" in q["sql"]]
    assert len(grouped) == 1 and "hub_tasks_taskcount" in grouped[0] and '"hub_tasks_task"' not in grouped[0]
    assert stats == [{"status": "delivered", "count": 3}]


def test_a_fold_leaves_one_row_per_status_and_the_same_stats(agent, network):
    first = send_task(actor=agent, alias="coder", task="a")["task_id"]
    send_task(actor=agent, alias="coder", task="b")
    cancel_task(actor=agent, task_id=first)
    send_task(actor=agent, alias="coder", task="c")
    before = list_tasks(actor=agent)["stats"]
    assert TaskCount.objects.filter(network=network).count() == 5

    counts_fold(network.id)

    rows = TaskCount.objects.filter(network=network).values_list("status", "n")
    assert sorted(rows) == [("cancelled", 1), ("delivered", 2)]
    assert list_tasks(actor=agent)["stats"] == before == counted(network)


def test_a_network_is_folded_after_every_fold_every_changes_commit(
    agent, network, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(counts, "FOLD_EVERY", 3)
    send_task(actor=agent, alias="coder", task="a")
    send_task(actor=agent, alias="coder", task="b")
    assert TaskCount.objects.filter(network=network).count() == 2

    with django_capture_on_commit_callbacks(execute=True):
        send_task(actor=agent, alias="coder", task="c")

    assert list(TaskCount.objects.filter(network=network).values_list("status", "n")) == [("delivered", 3)]


# --- writes that go around the tools ----------------------------------------------------------------


def test_a_bulk_insert_and_a_bulk_delete_are_counted(agent, network):
    later = timezone.now() + timedelta(hours=1)
    fields = {"from_name": "lead", "content": "bulk", "sender_key": "k", "created_by": "test"}
    Task.objects.bulk_create(
        Task(network=network, to_name=f"agent-{n}", status=("replied", "delivered")[n % 2], expires_at=later, **fields)
        for n in range(10)
    )
    assert list_tasks(actor=agent)["stats"] == [{"status": "delivered", "count": 5}, {"status": "replied", "count": 5}]

    Task.objects.filter(network=network, status="replied").delete()

    assert list_tasks(actor=agent)["stats"] == [{"status": "delivered", "count": 5}] == counted(network)


def test_deleting_a_network_with_tasks_deletes_its_counts_and_deadline(agent, network, other_network, make_actor):
    send_task(actor=agent, alias="coder", task="t")
    send_task(actor=make_actor(other_network), alias="coder", task="elsewhere")
    kept = TaskCount.objects.exclude(network=network).count()

    network_delete(network=network, by="operator")

    assert not TaskCount.objects.filter(network_id=network.id).exists()
    assert not TaskDeadline.objects.filter(network_id=network.id).exists()
    assert TaskCount.objects.count() == kept == 1


def test_the_migration_fills_the_counts_and_deadlines_of_tasks_already_there(agent, network, clock):
    for ttl in (60, 120):
        send_task(actor=agent, alias="coder", task=f"ttl {ttl}", ttl_seconds=ttl)
    cancelled = send_task(actor=agent, alias="coder", task="c", ttl_seconds=30)["task_id"]
    cancel_task(actor=agent, task_id=cancelled)
    TaskCount.objects.all().delete()
    TaskDeadline.objects.all().delete()  # as before the migration: tasks, and neither table filled

    migration = importlib.import_module("hub_tasks.migrations.0003_deadlines_and_counts")
    with connection.cursor() as cursor:
        for statement in migration.FILL:
            cursor.execute(statement)

    assert list_tasks(actor=agent)["stats"] == [
        {"status": "delivered", "count": 2},
        {"status": "cancelled", "count": 1},
    ]
    assert TaskDeadline.objects.get(network=network).due_at == timezone.now() + timedelta(seconds=60)


# --- many senders at once (PostgreSQL: no shared counter row to wait on) ----------------------------


@pytest.mark.race
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("unlimited")
def test_concurrent_sends_and_moves_in_one_network_keep_the_counts_exact(agent, network):
    sent = [send_task(actor=agent, alias="coder", task=f"early {n}")["task_id"] for n in range(8)]

    outcomes = race(
        *[lambda n=n: send_task(actor=agent, alias=ALIASES[n % 2], task=f"t{n}") for n in range(16)],
        *[lambda t=t: cancel_task(actor=agent, task_id=t) for t in sent[:4]],
        *[lambda t=t: ack_inbox(actor=agent, alias="coder", message_id=t) for t in sent[4:]],
    )

    assert all(outcome["ok"] for outcome in outcomes)
    summed = {row["status"]: row["count"] for row in list_tasks(actor=agent)["stats"]}
    assert summed == {"delivered": 16, "cancelled": 4, "acked": 4}
    assert list_tasks(actor=agent)["stats"] == counted(network)
