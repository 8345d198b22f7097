"""Budgets under concurrent callers on real connections: raises racing each other and new sends
release each waiting task once and strand none; usage reports racing past 80 % and 100 % mark each
once. On PostgreSQL the budgets' row locks are raced for real; on SQLite writers are serialised.
"""

from __future__ import annotations

import pytest

from hub_events.models import OPERATORS, Event
from hub_tasks.models import Task
from tests.helpers.calls import budget_set, report_completion, send_task_id
from tests.helpers.races import race
from tests.helpers.tasks import take

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.race]


def spend(agent, usd: float) -> None:
    task_id = send_task_id(agent, "spend")
    take(agent, task_id)
    report_completion(actor=agent, alias="coder", task=task_id, result="done", cost_usd=usd)


def states() -> list[str]:
    return [e.payload["state"] for e in Event.objects.filter(type="budget_updated", audience=OPERATORS).order_by("pk")]


def test_concurrent_raises_release_each_waiting_task_once(owner, agent):
    budget_set(actor=owner, period="day", limit_usd=1.0)
    spend(agent, 1.0)
    waiting = [send_task_id(agent, f"queued {n}") for n in range(10)]
    assert Task.objects.filter(pk__in=waiting, waiting_budget__isnull=False).count() == 10

    outcomes = race(*[lambda: budget_set(actor=owner, period="day", limit_usd=5.0)] * 4)

    assert all(outcome["budget"]["state"] == "ok" for outcome in outcomes), outcomes
    for task_id in waiting:
        task = Task.objects.get(pk=task_id)
        assert (task.status, task.waiting_budget) == ("delivered", None)
        assert task.events.filter(to_status="delivered").count() == 1
        assert task.inbox_messages.count() == 1
    assert states().count("released") == 1


@pytest.mark.parametrize("round_number", range(3))
def test_sends_racing_a_raise_are_delivered_or_released_none_stranded(owner, agent, round_number):
    budget_set(actor=owner, period="day", limit_usd=1.0)
    spend(agent, 1.0)

    sends = [lambda n=n: send_task_id(agent, f"send {n}") for n in range(6)]
    outcomes = race(lambda: budget_set(actor=owner, period="day", limit_usd=9.0), *sends)

    assert all(not isinstance(outcome, Exception) for outcome in outcomes), outcomes
    sent = Task.objects.filter(content__startswith="send ")
    assert sent.count() == 6
    assert sorted(sent.values_list("status", flat=True)) == ["delivered"] * 6  # none left waiting
    for task in sent:
        assert task.events.filter(to_status="delivered").count() == 1


def test_usage_reports_racing_past_the_marks_warn_and_reach_once(owner, agent):
    budget_set(actor=owner, period="day", limit_usd=1.0)
    aliases = [f"a{n}" for n in range(8)]
    tasks = {alias: send_task_id(agent, f"run {alias}", alias=alias) for alias in aliases}
    for alias, task_id in tasks.items():
        take(agent, task_id, alias)

    reports = [
        lambda alias=alias: report_completion(actor=agent, alias=alias, task=tasks[alias], result="done", cost_usd=0.15)
        for alias in aliases
    ]
    outcomes = race(*reports)

    assert all(not isinstance(outcome, Exception) for outcome in outcomes), outcomes
    assert states().count("reached") == 1  # 8 x 0.15 = 1.20
    assert states().count("warned") <= 1  # a report may cross both marks at once: then only reached
