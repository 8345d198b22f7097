"""Budgets over REST (/api/v1/budgets): the same tools, for a network's owners and admins to change
and anyone in it to read; a spent budget that refuses answers send_task with a 409."""

from __future__ import annotations

import pytest

from tests.helpers.rest import Api, assert_refused

pytestmark = pytest.mark.django_db


def test_an_admin_sets_a_refusing_budget_and_a_spent_one_refuses_send_task(client, network):
    admin, member = Api(client, network, "admin"), Api(client, network, "member")
    answer = admin.post("budgets", {"period": "day", "alias": "coder", "limit_tokens": 100, "on_limit": "refuse"})
    assert answer.status_code == 200, answer.content
    budget = answer.json()["budget"]
    assert (budget["alias"], budget["limit_tokens"], budget["limit_usd"], budget["state"]) == ("coder", 100, None, "ok")

    task_id = member.post("tasks", {"alias": "coder", "task": "spend"}).json()["task_id"]
    completed = member.post("completions", {"alias": "coder", "task": task_id, "result": "ok", "tokens_out": 100})
    assert completed.status_code == 201, completed.content

    body = assert_refused(member.post("tasks", {"alias": "coder", "task": "more"}), 409, "budget_exhausted")
    assert body["budget_id"] == budget["budget_id"] and "100 of 100 tokens" in body["message"]
    assert member.post("tasks", {"alias": "helper", "task": "elsewhere"}).status_code == 201
    (listed,) = member.get("budgets").json()["budgets"]
    assert (listed["state"], listed["spent_tokens"], listed["percent"]) == ("reached", 100, 100.0)

    assert_refused(member.post("budgets", {"period": "day", "limit_usd": 5}), 403, "permission_denied")
    assert_refused(member.post(f"budgets/{budget['budget_id']}/delete"), 403, "permission_denied")
    assert admin.post(f"budgets/{budget['budget_id']}/delete").json() == {"ok": True, "deleted": True}
    assert member.post("tasks", {"alias": "coder", "task": "again"}).status_code == 201
    assert_refused(admin.post(f"budgets/{budget['budget_id']}/delete"), 404, "budget_not_found")


def test_a_budget_without_a_limit_is_refused_as_schema_valid_input_is(client, network):
    answer = Api(client, network, "owner").post("budgets", {"period": "month"})
    assert_refused(answer, 409, "invalid_argument", field="limit_usd")
