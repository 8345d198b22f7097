"""report_completion whose `task` matches no task is recorded, and says so (issue 24)."""

from __future__ import annotations

import pytest

from hub_agents.services import token_create
from tests.helpers.mcp import call

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(network) -> str:
    return token_create(network=network, role="member", name="coder")[1]


def test_a_completion_that_matches_no_task_is_recorded_with_a_warning(client, token):
    arguments = {"alias": "coder", "task": "task_doesnotexist", "result": "done"}

    outcome = call(client, "report_completion", arguments, token=token)["structuredContent"]

    assert outcome["ok"] is True and outcome["task_id"] is None and outcome["completion_id"]
    assert set(outcome) == {"ok", "completion_id", "task_id", "warning"}
    assert "without a task" in outcome["warning"] and "task_doesnotexist" in outcome["warning"]


def test_a_completion_that_closes_its_task_has_no_warning(client, token):
    sent = call(client, "send_task", {"alias": "coder", "task": "write it"}, token=token)["structuredContent"]

    outcome = call(
        client, "report_completion", {"alias": "coder", "task": sent["task_id"], "result": "done"}, token=token
    )["structuredContent"]

    assert set(outcome) == {"ok", "completion_id", "task_id"}
    assert outcome["task_id"] == sent["task_id"]
