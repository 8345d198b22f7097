"""The dashboard shows runs' usage (issue 25): per attempt on the task page, with the task's
budget; per agent and for the network, today and all time, on the completions page."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.helpers.calls import ack_inbox, get_inbox, report_completion, send_task

pytestmark = pytest.mark.django_db


def run(agent, alias: str, *, tokens_in: int, cost_usd: float, model: str = "gpt-5-codex", **extra) -> str:
    task_id = send_task(actor=agent, alias=alias, task=f"job for {alias}", from_session="lead", **extra)["task_id"]
    (message,) = [m for m in get_inbox(actor=agent, alias=alias)["messages"] if m["task_id"] == task_id]
    ack_inbox(actor=agent, alias=alias, message_id=message["id"])
    report_completion(
        actor=agent, alias=alias, task=task_id, result="done", tokens_in=tokens_in, tokens_out=5, cost_usd=cost_usd,
        model=model, duration_minutes=2,
    )  # fmt: skip
    return task_id


def test_the_task_page_shows_each_attempts_usage_and_the_budget(agent, login):
    task_id = run(agent, "coder", tokens_in=1234, cost_usd=0.5, budget_usd=3.0, budget_tokens=9000)

    page = login().get(f"/tasks/{task_id}/").content.decode()

    assert "tokens in 1234 / out 5" in page
    assert "$0.5000" in page and "gpt-5-codex" in page and "120 s" in page
    assert "$3.0000" in page and "9000 tokens" in page


def test_the_completions_page_totals_usage_per_agent_and_network_today_and_all_time(agent, login, clock):
    run(agent, "coder", tokens_in=100, cost_usd=1.0)
    clock.tick(timedelta(days=2))
    run(agent, "coder", tokens_in=20, cost_usd=0.25)
    run(agent, "reviewer", tokens_in=3, cost_usd=0.5)

    page = login().get("/completions/").content.decode()

    network = page.split('data-key="usage-network"')[1].split("</tr>")[0]
    coder = page.split('data-key="usage-coder"')[1].split("</tr>")[0]
    assert "<td>2</td><td>23 / 10</td><td>$0.7500</td><td>3</td><td>123 / 15</td><td>$1.7500</td>" in network
    assert "<td>1</td><td>20 / 5</td><td>$0.2500</td><td>2</td><td>120 / 10</td><td>$1.2500</td>" in coder
