"""REST takes issue 25's arguments as MCP does (one spec): a run's usage and a replay key on
completions, replies, acks and status reports, a budget on tasks; the OpenAPI schema says so."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from hub_agents.services import token_create
from hub_tasks.models import Completion

pytestmark = pytest.mark.django_db

API = "/api/v1/"


@pytest.fixture
def post(client: Client, network):
    _, raw = token_create(network=network, role="member", name="api")
    headers = {"Authorization": f"Bearer {raw}"}

    def call(path: str, body: dict[str, Any]) -> Any:
        return client.post(API + path, data=json.dumps(body), content_type="application/json", headers=headers)

    call.get = lambda path: client.get(API + path, headers=headers)  # type: ignore[attr-defined]
    return call


def test_a_budget_usage_and_replay_key_over_rest(post):
    sent = post("tasks", {"alias": "coder", "task": "fix it", "from_session": "lead", "budget_usd": 2.5}).json()
    (message,) = post.get("sessions/coder/inbox").json()["messages"]
    assert message["budget_usd"] == 2.5
    assert post(f"sessions/coder/inbox/{message['id']}/ack", {"idempotency_key": "ack-1"}).status_code == 200
    assert post(f"sessions/coder/inbox/{message['id']}/ack", {"idempotency_key": "ack-1"}).status_code == 200
    body = {"alias": "coder", "task": sent["task_id"], "result": "done", "tokens_in": 10, "cost_usd": 0.2}

    first = post("completions", {**body, "idempotency_key": "c-1"})
    again = post("completions", {**body, "idempotency_key": "c-1"})
    reused = post("completions", {**body, "result": "else", "idempotency_key": "c-1"})

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert reused.status_code == 409 and reused.json()["error"] == "idempotency_key_reused"
    assert Completion.objects.count() == 1
    (attempt,) = post.get(f"tasks/{sent['task_id']}").json()["attempts"]
    assert (attempt["tokens_in"], attempt["cost_usd"]) == (10, 0.2)


def test_the_openapi_schema_lists_the_new_arguments(client):
    document = client.get("/api/v1/schema", {"format": "json"}).json()

    def body(path: str, method: str = "post") -> dict[str, Any]:
        operation = document["paths"][path][method]
        return operation["requestBody"]["content"]["application/json"]["schema"]["properties"]

    completions, replies, tasks = body("/api/v1/completions"), body("/api/v1/replies"), body("/api/v1/tasks")
    for properties in (completions, replies):
        assert {"tokens_in", "tokens_out", "cost_usd", "model", "idempotency_key"} <= set(properties)
        assert properties["tokens_in"]["minimum"] == 0 and properties["model"]["maxLength"] == 200
    assert tasks["budget_tokens"]["minimum"] == 1 and tasks["budget_usd"]["minimum"] > 0
    assert "idempotency_key" in body("/api/v1/sessions/report")
