"""A run's usage (issue 25): tokens, cost, model and duration reported with report_completion and
send_reply land once on the task's attempt the reporting agent ran, are summed per agent and day,
and a task carries send_task's budget to its agent."""

from __future__ import annotations

from functools import partial

import pytest

from hub_core.errors import HubError
from hub_tasks.models import AgentUsage, TaskAttempt
from tests.helpers.calls import (
    get_inbox,
    get_task,
    reassign_task,
    report_completion,
    retry_task,
    send_reply,
    send_task_id,
)
from tests.helpers.tasks import take

pytestmark = pytest.mark.django_db

CODER, LEAD = "coder", "lead"
USAGE = {"tokens_in": 1200, "tokens_out": 340, "cost_usd": 0.0125, "model": "claude-sonnet-4-5"}


send = partial(send_task_id, task="write quicksort")


def attempts(agent, task_id: str) -> list[dict]:
    return get_task(actor=agent, task_id=task_id)["attempts"]


def test_report_completion_stores_usage_and_duration_on_the_attempt_it_closes(agent):
    task_id = send(agent)
    take(agent, task_id)

    report_completion(actor=agent, alias=CODER, task=task_id, result="done", duration_minutes=1.5, **USAGE)

    (attempt,) = attempts(agent, task_id)
    assert attempt["outcome"] == "replied"
    assert {key: attempt[key] for key in USAGE} == USAGE
    assert attempt["duration_seconds"] == 90
    day = AgentUsage.objects.get(alias=CODER)
    assert (day.runs, day.tokens_in, day.tokens_out, day.model) == (1, 1200, 340, "claude-sonnet-4-5")
    assert day.cost_usd == pytest.approx(0.0125)


def test_an_attempt_without_usage_reads_null_and_old_calls_answer_as_before(agent):
    task_id = send(agent)
    take(agent, task_id)

    answer = report_completion(actor=agent, alias=CODER, task=task_id, result="done")

    assert set(answer) == {"ok", "completion_id", "task_id"}
    (attempt,) = attempts(agent, task_id)
    assert all(attempt[key] is None for key in (*USAGE, "duration_seconds"))
    assert not AgentUsage.objects.exists()


def test_a_failed_run_reported_by_reply_then_completion_counts_once_on_that_attempt(agent):
    task_id = send(agent, max_attempts=3, retry_backoff_seconds=1)
    take(agent, task_id)

    send_reply(actor=agent, alias=LEAD, text="broke", in_reply_to=task_id, status="failed", from_session=CODER, **USAGE)
    report_completion(actor=agent, alias=CODER, task=task_id, result="broke", duration_minutes=2, **USAGE)

    first = TaskAttempt.objects.get(task_id=task_id, number=1)
    assert (first.outcome, first.tokens_in, first.duration_seconds) == ("failed", 1200, 120)
    day = AgentUsage.objects.get(alias=CODER)
    assert (day.runs, day.tokens_in, day.tokens_out) == (1, 1200, 340)


def test_a_failed_runs_usage_never_lands_on_the_retry_delivered_meanwhile(agent):
    task_id = send(agent)
    take(agent, task_id)
    send_reply(actor=agent, alias=LEAD, text="broke", in_reply_to=task_id, status="failed", from_session=CODER)
    retry_task(actor=agent, task_id=task_id)  # attempt 2, delivered to the same agent, not taken yet

    report_completion(actor=agent, alias=CODER, task=task_id, result="broke", **USAGE)

    one, two = (TaskAttempt.objects.get(task_id=task_id, number=n) for n in (1, 2))
    assert one.tokens_in == 1200 and one.model == USAGE["model"]
    assert two.tokens_in is None and two.model is None


def test_usage_on_a_reply_stores_on_the_attempt_the_reply_ends(agent):
    task_id = send(agent)
    take(agent, task_id)

    send_reply(actor=agent, alias=LEAD, text="here", in_reply_to=task_id, from_session=CODER, tokens_out=7)

    (attempt,) = attempts(agent, task_id)
    assert (attempt["outcome"], attempt["tokens_out"], attempt["tokens_in"]) == ("replied", 7, None)


def test_usage_on_a_reply_to_no_task_is_refused_naming_what_to_pass(agent):
    with pytest.raises(HubError) as refused:
        send_reply(actor=agent, alias=LEAD, text="hi", cost_usd=0.5)

    assert refused.value.code == "invalid_argument"
    assert refused.value.extra["field"] == "cost_usd"
    assert "in_reply_to" in refused.value.message


@pytest.mark.parametrize(
    ("argument", "value"),
    [("tokens_in", -1), ("tokens_out", 1.5), ("cost_usd", -0.01), ("model", "m" * 201)],
)
def test_usage_out_of_its_limits_is_refused(agent, argument, value):
    task_id = send(agent)

    with pytest.raises(HubError) as refused:
        report_completion(actor=agent, alias=CODER, task=task_id, result="done", **{argument: value})

    assert refused.value.extra["field"] == argument


def test_a_budget_travels_with_the_task_to_its_inbox_row_get_task_retry_and_reassign(agent):
    task_id = send(agent, budget_usd=5.0, budget_tokens=2_000_000)

    message = take(agent, task_id)
    assert (message["budget_usd"], message["budget_tokens"]) == (5.0, 2_000_000)
    row = get_task(actor=agent, task_id=task_id)["task"]
    assert (row["budget_usd"], row["budget_tokens"]) == (5.0, 2_000_000)

    send_reply(actor=agent, alias=LEAD, text="broke", in_reply_to=task_id, status="failed", from_session=CODER)
    retry_task(actor=agent, task_id=task_id)
    reassign_task(actor=agent, task_id=task_id, new_alias="other")
    (again,) = get_inbox(actor=agent, alias="other")["messages"]
    assert (again["budget_usd"], again["budget_tokens"]) == (5.0, 2_000_000)


def test_a_task_without_budget_and_other_messages_carry_null(agent):
    task_id = send(agent)

    message = take(agent, task_id)

    assert message["budget_usd"] is None and message["budget_tokens"] is None
    assert get_task(actor=agent, task_id=task_id)["task"]["budget_usd"] is None


@pytest.mark.parametrize(("argument", "value"), [("budget_usd", 0), ("budget_usd", -1.0), ("budget_tokens", 0)])
def test_a_budget_must_allow_something(agent, argument, value):
    with pytest.raises(HubError) as refused:
        send(agent, **{argument: value})

    assert refused.value.extra["field"] == argument
