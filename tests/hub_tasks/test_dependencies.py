"""Dependencies: a task sent with depends_on stays created, in no inbox and with no attempt, until
every task it names is replied; then it is delivered and its agent woken like any new task, in the
transaction of the last reply. A dependency that ends without a reply cancels it, naming the
dependency, unless on_dependency_failure is "run".

Driven through the tools (tests/helpers/calls.py).
"""

from __future__ import annotations

import itertools
import re
import uuid
from types import SimpleNamespace

import pytest
from django.test import Client

from hub_agents.services import membership_set
from hub_core.events import EventType
from hub_tasks import limits
from tests.helpers import refused
from tests.helpers.calls import (
    cancel_task,
    get_inbox,
    get_task,
    list_tasks,
    send_task,
    send_task_id,
)
from tests.helpers.tasks import reply

LEAD, CODER = "lead", "coder"


def inbox_tasks(agent) -> set[str]:
    return {m["task_id"] for m in get_inbox(actor=agent, alias=CODER, limit=100)["messages"]}


def status(agent, task_id: str) -> str:
    return get_task(actor=agent, task_id=task_id)["task"]["status"]


@pytest.fixture
def diamond(agent) -> dict[str, str]:
    """A → (B, C) → D: B and C wait for A, D for both."""
    a = send_task_id(agent, "A")
    b = send_task_id(agent, "B", depends_on=[a])
    c = send_task_id(agent, "C", depends_on=[a])
    d = send_task_id(agent, "D", depends_on=[b, c])
    return {"A": a, "B": b, "C": c, "D": d}


def test_a_diamond_delivers_each_task_once_all_it_waits_for_is_replied(
    agent, diamond, django_capture_on_commit_callbacks
):
    a, b, c, d = diamond["A"], diamond["B"], diamond["C"], diamond["D"]
    assert inbox_tasks(agent) == {a}
    assert [status(agent, t) for t in (b, c, d)] == ["created"] * 3
    held = get_task(actor=agent, task_id=d)
    assert (held["task"]["depends_on"], held["task"]["expires_at"], held["attempts"]) == ([b, c], None, [])
    assert get_task(actor=agent, task_id=a)["task"]["dependents"] == [b, c]

    reply(agent, a)
    assert inbox_tasks(agent) == {b, c}
    reply(agent, b)
    assert status(agent, d) == "created", "D still waits for C"
    # The last reply delivers D in its own transaction: its inbox row and new_task push commit with it.
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        reply(agent, c)
    assert status(agent, d) == "delivered"
    assert inbox_tasks(agent) == {d}
    released = get_task(actor=agent, task_id=d)
    assert released["task"]["expires_at"] is not None
    assert [attempt["number"] for attempt in released["attempts"]] == [1]
    assert [e["detail"] for e in released["events"]][-1] == "dependencies met"
    assert callbacks, "the release is pushed after the reply's commit"


def test_new_task_event_wakes_the_agent_on_release(agent, diamond, monkeypatch):
    pushed = []
    monkeypatch.setattr("hub_tasks.lifecycle.publish", lambda event: pushed.append(event))
    reply(agent, diamond["A"])
    woken = [e.payload["task_id"] for e in pushed if e.type == EventType.NEW_TASK]
    assert sorted(woken) == sorted([diamond["B"], diamond["C"]])


def test_a_failed_dependency_cancels_its_dependents_naming_it(agent, diamond):
    reply(agent, diamond["A"])
    reply(agent, diamond["B"])
    reply(agent, diamond["C"], status="failed")
    d = get_task(actor=agent, task_id=diamond["D"])
    assert d["task"]["status"] == "cancelled"
    assert d["events"][-1]["detail"] == f"dependency {diamond['C']} failed"
    assert diamond["D"] not in inbox_tasks(agent)
    notices = [m for m in get_inbox(actor=agent, alias=LEAD, limit=100)["messages"] if m["type"] == "notice"]
    assert any(diamond["C"] in m["content"] and m["task_id"] == diamond["D"] for m in notices)


def test_a_cancelled_task_cancels_the_whole_chain_after_it(agent, diamond):
    cancel_task(actor=agent, task_id=diamond["A"], reason="not needed")
    assert [status(agent, diamond[n]) for n in "BCD"] == ["cancelled"] * 3
    assert get_task(actor=agent, task_id=diamond["D"])["events"][-1]["detail"].startswith("dependency ")


def test_on_dependency_failure_run_delivers_it_anyway(agent):
    a = send_task_id(agent, "A")
    b = send_task_id(agent, "B")
    d = send_task_id(agent, "D", depends_on=[a, b], on_dependency_failure="run")
    reply(agent, a, status="failed")
    assert status(agent, d) == "created"
    reply(agent, b)
    assert status(agent, d) == "delivered"
    assert d in inbox_tasks(agent)


def test_a_failure_with_attempts_left_does_not_count(agent, clock):
    a = send_task_id(agent, "A", max_attempts=2, retry_backoff_seconds=10)
    d = send_task_id(agent, "D", depends_on=[a])
    reply(agent, a, status="failed")
    assert (status(agent, a), status(agent, d)) == ("created", "created")
    clock.tick(20)
    assert status(agent, a) == "delivered"  # the retry
    reply(agent, a)
    assert status(agent, d) == "delivered"


def test_a_dependency_replied_before_the_send_counts_as_met(agent):
    a = send_task_id(agent, "A")
    reply(agent, a)
    d = send_task_id(agent, "D", depends_on=[a])
    assert status(agent, d) == "delivered"
    assert d in inbox_tasks(agent)


def test_a_dependency_that_already_failed_cancels_at_once_or_runs(agent):
    a = send_task_id(agent, "A")
    reply(agent, a, status="failed")
    cancelled = send_task_id(agent, "D", depends_on=[a])
    assert status(agent, cancelled) == "cancelled"
    ran = send_task_id(agent, "E", depends_on=[a], on_dependency_failure="run")
    assert status(agent, ran) == "delivered"


@pytest.fixture
def ids_in_sending_order(monkeypatch) -> None:
    """Task ids that sort in the order the tasks are sent: the hub settles a task's dependents in id
    order, and uuid4 ids would pick that order at random."""
    sent = itertools.count(1)
    monkeypatch.setattr("hub_tasks.models.uuid", SimpleNamespace(uuid4=lambda: uuid.UUID(int=next(sent), version=4)))


@pytest.mark.usefixtures("ids_in_sending_order")
def test_a_dependent_the_cascade_cancelled_is_cancelled_once(agent):
    """C waits for A and for B, which waits for A: cancelling A cancels B, whose end cancels C; C, one
    of A's dependents too, must not then be cancelled a second time from a stale read of it."""
    a = send_task_id(agent, "A")
    b = send_task_id(agent, "B", depends_on=[a])
    c = send_task_id(agent, "C", depends_on=[a, b])
    cancel_task(actor=agent, task_id=a)
    moves = [(e["from_status"], e["to_status"]) for e in get_task(actor=agent, task_id=c)["events"]]
    assert moves == [(None, "created"), ("created", "cancelled")]
    notices = [m for m in get_inbox(actor=agent, alias=LEAD, limit=100)["messages"] if m["type"] == "notice"]
    assert len([m for m in notices if m["task_id"] == c]) == 1, "its sender is told once"


def test_dependencies_the_send_itself_ends_count_as_ended(agent, clock):
    """Sending D settles the tasks it names first: A's deadline has passed, so A expires, and that
    cancels B (which waits for A). Both have ended, so D, which runs whatever its dependencies' end,
    has nothing left to wait for."""
    a = send_task_id(agent, "A", ttl_seconds=30)
    b = send_task_id(agent, "B", depends_on=[a])
    clock.tick(30)  # A is overdue, and nothing has read since
    d = send_task_id(agent, "D", depends_on=[b, a], on_dependency_failure="run")
    assert (status(agent, a), status(agent, b)) == ("expired", "cancelled")
    assert status(agent, d) == "delivered", "held for a dependency that has ended: it would wait forever"


def test_fan_out_and_fan_in_of_any_width(agent):
    root = send_task_id(agent, "root")
    wide = [send_task_id(agent, f"leaf {n}", depends_on=[root]) for n in range(limits.DEPENDS_MAX)]
    join = send_task_id(agent, "join", depends_on=wide)
    reply(agent, root)
    assert inbox_tasks(agent) == set(wide)
    for leaf in wide:
        reply(agent, leaf)
    assert status(agent, join) == "delivered"


def test_a_dependency_in_another_network_is_not_found(agent, outsider):
    theirs = send_task(actor=outsider, alias=CODER, task="theirs")["task_id"]
    error = refused(send_task_id, agent, "D", depends_on=[theirs])
    assert error.code == "task_not_found"
    assert theirs in error.message


def test_no_cycle_can_be_named(agent):
    a = send_task_id(agent, "A")
    # A cycle needs a task to name one sent after it: an id that does not exist yet is refused.
    assert refused(send_task_id, agent, "B", depends_on=[a, "not-sent-yet"]).code == "task_not_found"
    assert refused(send_task_id, agent, "B", depends_on=[a, a]).code == "invalid_argument"
    too_many = [a] * (limits.DEPENDS_MAX + 1)
    assert refused(send_task_id, agent, "B", depends_on=too_many).code == "invalid_argument"


def test_list_tasks_blocked_shows_only_the_tasks_that_wait(agent, diamond):
    blocked = {row["task_id"] for row in list_tasks(actor=agent, blocked=True)["tasks"]}
    assert blocked == {diamond["B"], diamond["C"], diamond["D"]}
    reply(agent, diamond["A"])
    blocked = {row["task_id"] for row in list_tasks(actor=agent, blocked=True)["tasks"]}
    assert blocked == {diamond["D"]}
    assert len(list_tasks(actor=agent)["tasks"]) == 4  # the filter is off by default


def test_the_task_page_links_what_it_waits_for_and_what_waits_for_it(agent, diamond, django_user_model, network):
    user = django_user_model.objects.create_user("operator", password="pw")
    membership_set(user=user, network=network, role="owner")
    browser = Client()
    browser.force_login(user)
    page = browser.get(f"/tasks/{diamond['B']}/").content.decode()
    assert re.search(rf'class="dependency">Waits for: <a href="/tasks/{diamond["A"]}/">A</a>', page)
    assert re.search(rf'class="dependent">Waited for by: <a href="/tasks/{diamond["D"]}/">D</a>', page)
    assert "waiting for 1 task" in page
