"""Budgets through the tools: usage reported with report_completion (as a node reports it) moves a
budget; at 80 % one warning event and notice, at 100 % new work for its scope waits (list_tasks
blocked) or is refused (budget_exhausted), until an owner raises it or the period turns (the sweep);
owners and admins change budgets, audited; anyone in the network reads them.

Concurrent releases and reports on real connections: tests/hub_fleet/test_budget_races.py.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command

from hub_agents.models import AuditEntry
from hub_events.models import OPERATORS, Event
from hub_tasks.models import InboxMessage
from tests.helpers import refused
from tests.helpers.calls import (
    budget_delete,
    budget_list,
    budget_set,
    cancel_task,
    claim_task,
    get_task,
    list_tasks,
    report_completion,
    report_status,
    retry_task,
    send_task,
    send_task_id,
)
from tests.helpers.tasks import take

pytestmark = pytest.mark.usefixtures("clock")


def run(actor, usd: float = 0.0, tokens: int = 0, alias: str = "coder") -> str:
    """A task sent to `alias`, taken and completed with this usage, as a node reports a run."""
    task_id = send_task_id(actor, f"work {usd} {tokens}", alias=alias)
    take(actor, task_id, alias)
    report_completion(actor=actor, alias=alias, task=task_id, result="done", cost_usd=usd, tokens_in=tokens)
    return task_id


def status(actor, task_id: str) -> str:
    return get_task(actor=actor, task_id=task_id)["task"]["status"]


def blocked(actor) -> set[str]:
    return {row["task_id"] for row in list_tasks(actor=actor, blocked=True, limit=100)["tasks"]}


def events(*, changes: bool = False) -> list[dict]:
    """The budget_updated events of the operators' feed: the marks (warned, reached, released), and
    with `changes` the owners' changes (set, deleted) too."""
    found = [e.payload for e in Event.objects.filter(type="budget_updated", audience=OPERATORS).order_by("pk")]
    return [payload for payload in found if changes or payload["state"] not in ("set", "deleted")]


def notices(alias: str) -> list[str]:
    rows = InboxMessage.objects.filter(to_alias=alias, type=InboxMessage.Type.NOTICE, content__startswith="Budget")
    return list(rows.order_by("pk").values_list("content", flat=True))


def listed(actor, budget_id: str) -> dict:
    (found,) = [b for b in budget_list(actor=actor)["budgets"] if b["budget_id"] == budget_id]
    return found


def test_a_budget_reached_mid_day_holds_new_work_and_releases_it_when_raised(owner, agent, clock):
    budget = budget_set(actor=owner, alias="coder", period="day", limit_usd=1.0)["budget"]
    assert (budget["state"], budget["spent_usd"], budget["on_limit"]) == ("ok", 0.0, "hold")
    run(agent, usd=0.5)
    clock.tick(3600)
    run(agent, usd=0.6)  # 110 %: reached
    row = listed(agent, budget["budget_id"])
    assert (row["state"], row["spent_usd"], row["percent"]) == ("reached", pytest.approx(1.1), 110.0)
    assert [e["state"] for e in events()] == ["reached"]  # 50 % then 110 %: reached, with no warning first
    assert len(notices("coder")) == 1

    held = [send_task_id(agent, f"later {n}", priority=p) for n, p in enumerate(["low", "high"])]
    other = send_task_id(agent, "for another agent", alias="helper")
    assert blocked(agent) == set(held)
    assert get_task(actor=agent, task_id=held[0])["task"]["waiting_budget"] == budget["budget_id"]
    assert status(agent, other) == "delivered"
    assert listed(agent, budget["budget_id"])["waiting"] == 2

    raised = budget_set(actor=owner, alias="coder", period="day", limit_usd=5.0)["budget"]
    assert (raised["state"], raised["waiting"], raised["percent"]) == ("ok", 0, 22.0)
    assert [status(agent, task_id) for task_id in held] == ["delivered", "delivered"]
    assert get_task(actor=agent, task_id=held[0])["task"]["waiting_budget"] is None
    assert events()[-1]["state"] == "released"
    changes = AuditEntry.objects.filter(action=AuditEntry.Action.BUDGET_CHANGED).order_by("pk")
    assert [entry.detail["change"] for entry in changes] == ["created", "changed"]


def test_the_80_percent_warning_is_sent_once_a_period(owner, agent, clock):
    budget_set(actor=owner, period="month", limit_tokens=1000)  # the network's: the senders are told
    run(agent, tokens=700)
    assert events() == [] and notices("lead") == []
    run(agent, tokens=100)  # 80 %
    run(agent, tokens=50)
    run(agent, tokens=50, alias="helper")  # another agent of the network: 90 %
    (warning,) = events()
    assert (warning["state"], warning["alias"], warning["spent_tokens"], warning["percent"]) == (
        "warned", None, 800, 80.0
    )  # fmt: skip
    (notice,) = notices("lead")
    assert "80 % spent" in notice and "800 of 1000 tokens" in notice
    assert InboxMessage.objects.get(pk=warning["message_id"]).to_alias == "lead"
    assert send_task(actor=agent, alias="coder", task="still fine")["ok"]


def test_the_period_turning_releases_what_waited(owner, agent, clock):
    budget = budget_set(actor=owner, period="day", limit_usd=1.0)["budget"]
    run(agent, usd=1.0)
    waiting = send_task_id(agent, "tomorrow")
    assert blocked(agent) == {waiting}

    clock.tick(timedelta(days=1))
    call_command("sweep", "--once")
    assert status(agent, waiting) == "delivered"
    row = listed(agent, budget["budget_id"])
    assert (row["state"], row["spent_usd"], row["waiting"]) == ("ok", 0.0, 0)
    assert events()[-1]["state"] == "released"


def test_a_new_day_does_not_hold_new_work_before_the_sweep(owner, agent, clock):
    budget_set(actor=owner, alias="coder", period="day", limit_tokens=10)
    run(agent, tokens=10)
    today = send_task_id(agent, "today")
    assert blocked(agent) == {today}
    clock.tick(timedelta(days=1))
    assert status(agent, send_task_id(agent, "tomorrow")) == "delivered"


def test_a_refusing_budget_refuses_sends_and_claims_naming_itself(owner, agent):
    budget = budget_set(actor=owner, period="day", limit_usd=0.5, on_limit="refuse")["budget"]
    run(agent, usd=0.75)
    error = refused(send_task, actor=agent, alias="coder", task="more")
    assert (error.code, error.status, error.extra["budget_id"]) == ("budget_exhausted", 409, budget["budget_id"])
    assert "$0.7500 of $0.5000" in error.message and "budget_set" in error.message
    assert list_tasks(actor=agent, blocked=True)["tasks"] == []

    report_status(actor=agent, resume_id="r-a", alias="a", status="idle", skills=["gpu"])
    budget_set(actor=owner, period="day", limit_usd=1.0, on_limit="refuse")
    open_task = send_task(actor=agent, alias="pool", task="open", required_skills=["gpu"])["task_id"]
    budget_set(actor=owner, period="day", limit_usd=0.5, on_limit="hold")  # spent again; a claim is refused
    assert refused(claim_task, actor=agent, task_id=open_task, alias="a").code == "budget_exhausted"
    assert status(agent, open_task) == "created"


def test_a_retry_waits_for_a_spent_budget_and_a_delete_releases(owner, agent):
    budget = budget_set(actor=owner, alias="coder", period="day", limit_usd=1.0)["budget"]
    cancelled = send_task_id(agent, "cancel me")
    cancel_task(actor=agent, task_id=cancelled)
    run(agent, usd=2.0)
    retry_task(actor=agent, task_id=cancelled)
    assert blocked(agent) == {cancelled}
    budget_delete(actor=owner, budget_id=budget["budget_id"])
    assert status(agent, cancelled) == "delivered"
    assert budget_list(actor=agent)["budgets"] == []
    assert [e["state"] for e in events(changes=True)] == ["set", "reached", "deleted"]


def test_a_budget_needs_a_limit(owner):
    error = refused(budget_set, actor=owner, period="day")
    assert (error.code, error.extra["field"]) == ("invalid_argument", "limit_usd")


def test_only_owners_and_admins_change_budgets_members_and_viewers_read_them(owner, agent, viewer):
    budget = budget_set(actor=owner, period="month", limit_usd=3.0)["budget"]
    for actor in (agent, viewer):
        assert refused(budget_set, actor=actor, period="month", limit_usd=9.0).status == 403
        assert refused(budget_delete, actor=actor, budget_id=budget["budget_id"]).status == 403
        assert [row["limit_usd"] for row in budget_list(actor=actor)["budgets"]] == [3.0]


def test_another_networks_budget_is_not_found(owner, outsider):
    budget = budget_set(actor=owner, period="day", limit_tokens=5)["budget"]
    assert refused(budget_delete, actor=outsider, budget_id=budget["budget_id"]).code == "budget_not_found"
    assert budget_list(actor=outsider)["budgets"] == []
