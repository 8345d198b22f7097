"""Every attempt of a task is kept: a retry opens the next one and never erases the last one's result.

Driven through the services and the public transports (MCP tools/call, REST GET /api/v1/tasks/{id}).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from hub_agents.services import token_create
from hub_tasks.models import Task
from tests.helpers import NOW
from tests.helpers.calls import (
    cancel_task,
    get_task,
    reassign_task,
    report_completion,
    retry_task,
    send_reply,
    send_task,
)

pytestmark = pytest.mark.usefixtures("clock")


def _fail(agent, task_id: str, text: str, **extra: Any) -> None:
    send_reply(actor=agent, alias="lead", text=text, in_reply_to=task_id, status="failed", **extra)


def _fail_retry_fail_retry_reply(agent, clock) -> str:
    task_id = send_task(actor=agent, alias="coder", task="publish the notes", from_session="lead")["task_id"]
    clock.tick(60)
    _fail(agent, task_id, "registry is down (503)")
    clock.tick(60)
    retry_task(actor=agent, task_id=task_id, from_session="lead")
    clock.tick(60)
    _fail(agent, task_id, "disk full", from_session="coder-2")
    clock.tick(60)
    retry_task(actor=agent, task_id=task_id, from_session="lead")
    clock.tick(60)
    send_reply(actor=agent, alias="lead", text="published", in_reply_to=task_id, from_session="coder")
    return task_id


def test_fail_retry_fail_retry_reply_keeps_three_attempts(agent, clock):
    task_id = _fail_retry_fail_retry_reply(agent, clock)

    found = get_task(actor=agent, task_id=task_id)

    assert [(a["number"], a["alias"], a["outcome"], a["result"], a["ended_by"]) for a in found["attempts"]] == [
        (1, "coder", "failed", "registry is down (503)", "coder"),
        (2, "coder", "failed", "disk full", "coder-2"),
        (3, "coder", "replied", "published", "coder"),
    ]
    assert [(a["delivered_at"], a["ended_at"]) for a in found["attempts"]] == [
        ("2026-04-12T10:00:00.000Z", "2026-04-12T10:01:00.000Z"),
        ("2026-04-12T10:02:00.000Z", "2026-04-12T10:03:00.000Z"),
        ("2026-04-12T10:04:00.000Z", "2026-04-12T10:05:00.000Z"),
    ]
    # The contract's fields are unchanged: the task holds the last result only.
    assert found["task"]["result"] == "published" and found["task"]["status"] == "replied"


def test_a_failure_is_attributed_to_the_agent_that_reported_it_not_to_hub(agent, clock):
    task_id = send_task(actor=agent, alias="coder", task="publish", from_session="lead")["task_id"]
    _fail(agent, task_id, "registry is down (503)")  # no from_session, as agents often send it

    failed = [e for e in get_task(actor=agent, task_id=task_id)["events"] if e["to_status"] == "failed"]

    assert [e["detail"] for e in failed] == ["reply from coder"]


def test_a_retry_leaves_the_failed_attempt_whole_and_opens_a_fresh_one(agent, clock):
    task_id = send_task(actor=agent, alias="coder", task="publish", from_session="lead")["task_id"]
    _fail(agent, task_id, "registry is down (503)")
    retry_task(actor=agent, task_id=task_id, from_session="lead")

    first, second = get_task(actor=agent, task_id=task_id)["attempts"]

    assert first["result"] == "registry is down (503)" and first["outcome"] == "failed"
    assert second == {
        "number": 2,
        "alias": "coder",
        "outcome": None,
        "result": None,
        "ended_by": None,
        "delivered_at": "2026-04-12T10:00:00.000Z",
        "acked_at": None,
        "started_at": None,
        "ended_at": None,
        # Its run's usage: null until its agent reports it (tests/hub_tasks/test_usage.py).
        "tokens_in": None,
        "tokens_out": None,
        "cost_usd": None,
        "model": None,
        "duration_seconds": None,
    }


def test_reassign_hands_the_attempt_on_and_cancel_and_completion_end_one(agent, online, clock):
    online("coder", status="idle")
    task_id = send_task(actor=agent, alias="coder", task="port the lexer", from_session="lead")["task_id"]
    online("coder", status="working", task=task_id)
    clock.tick(30)
    reassign_task(actor=agent, task_id=task_id, new_alias="helper", from_session="lead")
    clock.tick(30)
    cancel_task(actor=agent, task_id=task_id, reason="not needed", from_session="lead")
    retry_task(actor=agent, task_id=task_id, from_session="lead")
    report_completion(actor=agent, alias="helper", task=task_id, result="lexer ported")

    attempts = get_task(actor=agent, task_id=task_id)["attempts"]

    assert [(a["alias"], a["outcome"], a["ended_by"]) for a in attempts] == [
        ("coder", "reassigned", "lead"),
        ("helper", "cancelled", "lead"),
        ("helper", "replied", "helper"),
    ]
    assert attempts[0]["started_at"] == NOW.isoformat().replace("+00:00", ".000Z")


@pytest.mark.django_db(transaction=True)
def test_get_task_returns_attempts_over_mcp_and_rest(network, clock):
    _, token = token_create(network=network, role="member")
    client = Client()
    headers = {"Authorization": f"Bearer {token}"}

    def tool(name: str, **arguments: Any) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        reply = client.post("/mcp", data=json.dumps(body), content_type="application/json", headers=headers)
        outcome = json.loads(reply.json()["result"]["content"][0]["text"])
        assert outcome["ok"], outcome
        return outcome

    task_id = tool("send_task", alias="coder", task="publish", from_session="lead")["task_id"]
    tool("send_reply", alias="lead", text="registry is down (503)", in_reply_to=task_id, status="failed")
    tool("retry_task", task_id=task_id)
    tool("send_reply", alias="lead", text="published", in_reply_to=task_id)

    over_mcp = tool("get_task", task_id=task_id)
    over_rest = client.get(f"/api/v1/tasks/{task_id}", headers=headers).json()

    for answer in (over_mcp, over_rest):
        assert [(a["number"], a["outcome"], a["result"], a["ended_by"]) for a in answer["attempts"]] == [
            (1, "failed", "registry is down (503)", "coder"),
            (2, "replied", "published", "coder"),
        ]
        assert answer["task"]["result"] == "published"
    assert Task.objects.get(pk=task_id).attempts.filter(ended_at__isnull=True).count() == 0
