"""/metrics shows each budget's spend of its period, its limits and the tasks waiting for it (issue
28), read from the database at scrape time like the hub's other state."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.helpers.calls import budget_set, report_completion, send_task_id
from tests.helpers.metrics import families, parse, value
from tests.helpers.tasks import take

pytestmark = pytest.mark.django_db


def test_each_budget_shows_its_spend_limits_and_waiting_tasks(owner, agent, network):
    budget_set(actor=owner, alias="coder", period="day", limit_usd=1.0)
    budget_set(actor=owner, period="month", limit_tokens=10_000)
    for alias, usd, tokens in (("coder", 0.75, 300), ("helper", 0.5, 200), ("coder", 0.5, 100)):
        task_id = send_task_id(agent, f"t {alias} {usd}", alias=alias)
        take(agent, task_id, alias)
        report_completion(actor=agent, alias=alias, task=task_id, result="x", cost_usd=usd, tokens_in=tokens)
    send_task_id(agent, "waits", alias="coder")  # the coder's day is spent: it waits

    text = Client().get("/metrics").content.decode()
    samples = parse(text)

    assert families(text)["commhub_budget_spent_usd"] == "gauge"
    coder = {"network": network.pk, "alias": "coder", "period": "day"}
    whole = {"network": network.pk, "alias": "", "period": "month"}
    assert value(samples, "commhub_budget_spent_usd", **coder) == pytest.approx(1.25)
    assert value(samples, "commhub_budget_limit_usd", **coder) == 1.0
    assert value(samples, "commhub_budget_spent_tokens", **coder) == 400
    assert value(samples, "commhub_budget_waiting_tasks", **coder) == 1
    assert value(samples, "commhub_budget_spent_tokens", **whole) == 600
    assert value(samples, "commhub_budget_limit_tokens", **whole) == 10_000
    assert value(samples, "commhub_budget_waiting_tasks", **whole) == 0
    assert ("commhub_budget_limit_usd", frozenset(whole.items())) not in samples  # no USD limit: no series
