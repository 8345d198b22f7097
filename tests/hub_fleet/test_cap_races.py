"""Concurrency caps under concurrent callers on real connections: runs ending and tasks sent at the
same moment never put more tasks with their agents than the cap, and each waiting task is released
once. On PostgreSQL the caps' row locks are raced for real; on SQLite writers are serialised.
"""

from __future__ import annotations

import pytest

from hub_tasks.models import CapSlot, Task
from tests.helpers.calls import cap_set, send_task_id
from tests.helpers.races import race
from tests.helpers.tasks import reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.race]
WITH_AGENT = ("delivered", "acked", "running")
LIMIT = 2
ROUNDS = range(5)


def with_agent() -> list[str]:
    return list(Task.objects.filter(status__in=WITH_AGENT).order_by("delivered_at", "pk").values_list("pk", flat=True))


def test_runs_ending_while_tasks_are_sent_never_pass_the_cap(owner, agent):
    cap_set(actor=owner, scope="all", limit=LIMIT)
    for n in range(6):
        send_task_id(agent, f"queued {n}")

    for round_number in ROUNDS:
        running = with_agent()
        assert len(running) == LIMIT
        ends = [lambda task_id=task_id: reply(agent, task_id) for task_id in running]
        sends = [lambda text=f"round {round_number} send {n}": send_task_id(agent, text) for n in range(4)]
        outcomes = race(*ends, *sends)

        assert all(not isinstance(outcome, Exception) for outcome in outcomes), outcomes
        assert len(with_agent()) == LIMIT  # the two that ended are replaced, by two, not more
        assert CapSlot.objects.count() == LIMIT
        assert Task.objects.filter(status="replied").count() == LIMIT * (round_number + 1)


def test_concurrent_raises_of_a_cap_release_each_waiting_task_once(owner, agent):
    cap_set(actor=owner, scope="all", limit=1)
    for n in range(10):
        send_task_id(agent, f"queued {n}")

    outcomes = race(*[lambda: cap_set(actor=owner, scope="all", limit=4)] * 4)

    assert all(outcome["cap"]["limit"] == 4 for outcome in outcomes), outcomes
    assert len(with_agent()) == 4 == CapSlot.objects.count()
    released = Task.objects.filter(status="delivered").values_list("pk", flat=True)
    for task_id in released:
        assert Task.objects.get(pk=task_id).events.filter(to_status="delivered").count() == 1


@pytest.mark.parametrize("round_number", ROUNDS)
def test_concurrent_sends_to_an_idle_cap_fill_exactly_its_slots(owner, agent, round_number):
    cap_set(actor=owner, scope="all", limit=LIMIT)

    outcomes = race(*[lambda n=n: send_task_id(agent, f"send {n}") for n in range(8)])

    assert all(isinstance(outcome, str) for outcome in outcomes), outcomes
    assert len(with_agent()) == LIMIT == CapSlot.objects.count()
    assert Task.objects.filter(status="created", waiting_cap__isnull=False).count() == 8 - LIMIT
