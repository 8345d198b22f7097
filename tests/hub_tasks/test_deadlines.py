"""Settling deadlines costs no query until a network's earliest deadline passes (issue 15).

The reads that show tasks settle overdue deadlines first. They look at the network's earliest
deadline (TaskDeadline, kept by database triggers) through a per-process copy, and sweep only once it
has passed; after the sweep the deadline moves on to the next task still waiting. test_expiry.py,
test_moved_clock.py and test_reads_do_not_write.py hold what a reader sees; here: what it costs, and
that the earliest deadline is never later than a waiting task's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from hub_agents.actors import Actor
from hub_agents.models import Network
from hub_agents.services import network_create
from hub_tasks import deadlines
from hub_tasks.deadlines import LEASE, deadlines_raise
from hub_tasks.models import UNTIL_RELEASED, WAITING, Task, TaskDeadline, TaskStatus
from tests.helpers import NOW
from tests.helpers.calls import (
    ack_inbox,
    budget_set,
    cap_set,
    get_inbox,
    get_session_status,
    get_task,
    list_tasks,
    reassign_task,
    report_completion,
    report_status,
    send_task,
    send_task_id,
)
from tests.helpers.tasks import take

LOOKS: dict[str, Callable[[Actor, str], Any]] = {
    "get_task": lambda agent, task_id: get_task(actor=agent, task_id=task_id),
    "get_inbox": lambda agent, task_id: get_inbox(actor=agent, alias="coder"),
    "list_tasks": lambda agent, task_id: list_tasks(actor=agent),
    "get_session_status": lambda agent, task_id: get_session_status(actor=agent, alias="coder"),
    "report_status": lambda agent, task_id: report_status(actor=agent, resume_id="r", alias="coder", status="idle"),
}


def statements(look: Callable[[], Any]) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        look()
    return [query["sql"] for query in captured.captured_queries]


def deadline_reads(sql: list[str]) -> list[str]:
    """Reads of the networks' earliest deadlines."""
    return [statement for statement in sql if "hub_tasks_taskdeadline" in statement]


def probes(sql: list[str]) -> list[str]:
    """Looks for overdue tasks in the task table (a sweep)."""
    return [statement for statement in sql if '"expires_at" <=' in statement]


def due_at(network: Network):
    return TaskDeadline.objects.filter(network=network).values_list("due_at", flat=True).first()


@pytest.mark.parametrize("look", LOOKS.values(), ids=LOOKS.keys())
def test_a_look_before_any_deadline_is_due_asks_the_database_nothing_about_deadlines(agent, look):
    task_id = send_task(actor=agent, alias="coder", task="t", ttl_seconds=60)["task_id"]
    look(agent, task_id)  # the first look after this process's own send reads the deadline, once

    sql = statements(lambda: look(agent, task_id))

    assert (deadline_reads(sql), probes(sql)) == ([], [])
    assert Task.objects.get(pk=task_id).status == "delivered"


def test_a_send_of_this_process_is_seen_at_once_with_one_read_of_the_deadline(agent, clock):
    task_id = send_task(actor=agent, alias="coder", task="t", ttl_seconds=60)["task_id"]
    list_tasks(actor=agent)
    sooner = send_task(actor=agent, alias="coder", task="sooner", ttl_seconds=5)["task_id"]

    sql = statements(lambda: get_task(actor=agent, task_id=task_id))
    assert (len(deadline_reads(sql)), probes(sql)) == (1, [])
    assert deadline_reads(statements(lambda: get_task(actor=agent, task_id=task_id))) == []
    clock.tick(5)
    statuses = {row["task_id"]: row["status"] for row in list_tasks(actor=agent)["tasks"]}
    assert statuses == {task_id: "delivered", sooner: "expired"}


def test_a_deadline_written_elsewhere_is_seen_once_the_lease_ends(agent, network, clock):
    """Another process's write drops no copy here; the copy is trusted for LEASE seconds only."""
    task_id = send_task(actor=agent, alias="coder", task="t", ttl_seconds=3600)["task_id"]
    list_tasks(actor=agent)
    # As another process (or any SQL) would: the database's triggers bring the network's deadline forward.
    Task.objects.filter(pk=task_id).update(expires_at=timezone.now() + timedelta(seconds=LEASE))
    assert due_at(network) == timezone.now() + timedelta(seconds=LEASE)
    assert deadline_reads(statements(lambda: list_tasks(actor=agent))) == []  # within the lease: the copy

    clock.tick(LEASE)

    assert get_task(actor=agent, task_id=task_id)["task"]["status"] == "expired"


def test_after_a_sweep_the_deadline_moves_to_the_next_waiting_task(agent, network, clock):
    first = send_task(actor=agent, alias="coder", task="a", ttl_seconds=60)["task_id"]
    send_task(actor=agent, alias="coder", task="b", ttl_seconds=120)
    taken = send_task(actor=agent, alias="coder", task="c", ttl_seconds=90)["task_id"]
    ack_inbox(actor=agent, alias="coder", message_id=taken)  # picked up: its deadline no longer counts
    assert due_at(network) == timezone.now() + timedelta(seconds=60)

    clock.tick(60)
    get_task(actor=agent, task_id=first)

    assert due_at(network) == timezone.now() + timedelta(seconds=60)  # b's, not c's
    clock.tick(59)
    sql = statements(lambda: list_tasks(actor=agent))
    assert (len(deadline_reads(sql)), probes(sql)) == (1, [])  # the lease has ended: read, but no sweep


def test_when_nothing_waits_the_deadline_is_empty_and_no_look_sweeps(agent, network, clock):
    task_id = send_task(actor=agent, alias="coder", task="t", ttl_seconds=60)["task_id"]
    ack_inbox(actor=agent, alias="coder", message_id=task_id)
    clock.tick(61)
    list_tasks(actor=agent)  # the passed deadline was the acked task's: nothing to expire

    assert Task.objects.get(pk=task_id).status == "acked"
    assert TaskDeadline.objects.get(network=network).due_at is None
    clock.tick(3600 * 24)
    assert probes(statements(lambda: list_tasks(actor=agent))) == []


@pytest.mark.parametrize("status", TaskStatus.values)
def test_only_a_waiting_task_brings_the_deadline_forward_however_its_row_is_written(db, status):
    """The triggers' list of waiting statuses is hub_tasks.models.WAITING."""
    net = network_create(name=f"net-{status}")[0]
    past = timezone.now() - timedelta(seconds=1)
    fields = {"from_name": "lead", "to_name": "coder", "content": "raw", "sender_key": "k", "created_by": "test"}
    inserted = Task.objects.create(network=net, status=status, expires_at=past, **fields)
    assert (due_at(net) == past) == (status in WAITING)

    other = network_create(name=f"other-{status}")[0]
    updated = Task.objects.create(network=other, status="replied", expires_at=past, **fields)
    Task.objects.filter(pk=updated.pk).update(status=status)
    assert (due_at(other) == past) == (status in WAITING)
    assert inserted.pk != updated.pk


def test_a_task_reassigned_past_its_deadline_is_expired_by_the_reassign_itself(agent, clock):
    """A reassign keeps the deadline: one that has passed must not wait for some process's next look."""
    task_id = send_task(actor=agent, alias="coder", task="t", from_session="lead", ttl_seconds=60)["task_id"]
    ack_inbox(actor=agent, alias="coder", message_id=task_id)
    clock.tick(120)

    reassign_task(actor=agent, task_id=task_id, new_alias="reviewer")

    assert Task.objects.get(pk=task_id).status == "expired"


# --- a task waiting for a cap or a budget: no deadline of its own until released ------------------


def hold_coder(kind: str, owner: Actor, agent: Actor) -> str:
    """From now on coder's next task waits: for a slot of a full cap of 1, or for coder's spent
    budget. The field of get_task's row that names what it waits for."""
    if kind == "cap":
        cap_set(actor=owner, scope="all", limit=1)
        take(agent, send_task_id(agent, "runs"))  # holds the slot (acked: its lease, if any, is ahead)
        return "waiting_cap"
    budget_set(actor=owner, alias="coder", period="day", limit_usd=1.0)
    spent = send_task_id(agent, "spends")
    take(agent, spent)
    report_completion(actor=agent, alias="coder", task=spent, result="done", cost_usd=1.5)
    return "waiting_budget"


@pytest.mark.parametrize("kind", ["cap", "budget"])
def test_a_scheduled_task_released_into_a_wait_leaves_no_past_deadline_and_no_look_sweeps(
    owner, agent, network, clock, kind
):
    """Its not_before has passed, but it waits for a slot or a budget: it falls due at none of its
    times until released, so the network's deadline must not stay at its not_before."""
    waiting = hold_coder(kind, owner, agent)
    task_id = send_task_id(agent, "scheduled", not_before_seconds=60, ttl_seconds=60)
    clock.tick(60)
    get_inbox(actor=agent, alias="coder")  # the sweep releases it: it waits now

    row = get_task(actor=agent, task_id=task_id)["task"]
    assert (row["status"], row[waiting] is not None) == ("created", True)
    assert due_at(network) > timezone.now()
    clock.tick(1)  # past this process's copy: the deadline is read again
    sql = statements(lambda: get_inbox(actor=agent, alias="coder"))
    assert (len(deadline_reads(sql)), probes(sql)) == (1, [])


@pytest.mark.parametrize("kind", ["cap", "budget"])
def test_a_task_sent_past_its_not_before_into_a_wait_sets_no_past_deadline(owner, agent, network, clock, kind):
    """The insert's trigger alone (no sweep has run yet)."""
    waiting = hold_coder(kind, owner, agent)
    task_id = send_task_id(agent, "late", not_before=(NOW - timedelta(seconds=1)).isoformat())

    assert get_task(actor=agent, task_id=task_id)["task"][waiting] is not None
    assert due_at(network) > timezone.now()


@pytest.mark.parametrize("field", ["waiting_cap", "waiting_budget"])
def test_a_wait_that_ends_however_its_row_is_written_brings_the_deadline_forward(db, field):
    """The triggers count a task's not_before again once nothing but it holds the task."""
    net = network_create(name=f"net-{field}")[0]
    past = timezone.now() - timedelta(seconds=1)
    fields = {"from_name": "lead", "to_name": "coder", "content": "raw", "sender_key": "k", "created_by": "test"}
    task = Task.objects.create(
        network=net, status="created", expires_at=UNTIL_RELEASED, not_before=past, **{field: "x"}, **fields
    )
    assert due_at(net) == UNTIL_RELEASED

    Task.objects.filter(pk=task.pk).update(**{field: None})

    assert due_at(net) == past


# --- a raise racing a write it cannot see yet (PostgreSQL: row visibility and locks for real) --------


@pytest.fixture
def patient_raise(monkeypatch) -> Iterator[None]:
    """The raise waits as long as the test needs, instead of giving up after RAISE_WAIT."""
    monkeypatch.setattr(deadlines, "RAISE_WAIT", "60s")
    yield


@pytest.mark.race
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("patient_raise")
def test_a_raise_waits_for_a_send_it_cannot_see_yet(agent, network):
    if connection.vendor != "postgresql":
        pytest.skip("on SQLite a raise and a send never overlap: each takes the write lock at BEGIN")
    early = send_task(actor=agent, alias="coder", task="early", ttl_seconds=60)["task_id"]
    ack_inbox(actor=agent, alias="coder", message_id=early)  # the network's deadline is now too early
    sent, release, outcome = threading.Event(), threading.Event(), {}

    def send_and_hold() -> None:
        try:
            with transaction.atomic():
                # Later than the network's deadline: the triggers leave it (and its row) alone.
                outcome["task_id"] = send_task(actor=agent, alias="coder", task="late", ttl_seconds=600)["task_id"]
                sent.set()
                release.wait(60)
        finally:
            connection.close()

    def raise_() -> None:
        try:
            deadlines_raise([network.id])
        finally:
            connection.close()

    sender = threading.Thread(target=send_and_hold)
    sender.start()
    assert sent.wait(60)
    raiser = threading.Thread(target=raise_)
    raiser.start()
    _wait_while_only_the_raise_waits(raiser)
    release.set()
    sender.join(60)
    raiser.join(60)

    late = Task.objects.get(pk=outcome["task_id"])
    assert due_at(network) == late.expires_at  # not empty: the raise saw the send once it committed


def _wait_while_only_the_raise_waits(raiser: threading.Thread) -> None:
    """Until the raise waits for a lock (or, were it not to wait, has finished)."""
    with connection.cursor() as cursor:
        while raiser.is_alive():
            cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
            if cursor.fetchone()[0]:
                return
            threading.Event().wait(0.01)
