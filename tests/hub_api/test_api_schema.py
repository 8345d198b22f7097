"""The OpenAPI description of /api/v1/, the Swagger UI that shows it, and /healthz.

The schema is read as a client reads it (GET /api/v1/schema, no token), and checked against an
independent table of what each tool's endpoint must be, then against real responses.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.test import Client

from hub_agents.models import Network
from hub_agents.services import token_authenticate, token_create
from tests.helpers.calls import report_status

# /mcp and the inbox endpoint run their database work through hub_core.waiting's pool: in these rolled-back
# tests it runs on the test's own thread and connection (tests/plugins/pool.py), so it sees the test's rows.
pytestmark = pytest.mark.django_db

# operationId -> (path, method, success status, required body fields; None for a GET)
OPERATIONS: dict[str, tuple[str, str, str, list[str] | None]] = {
    "report_status": ("/api/v1/sessions/report", "post", "200", ["resume_id", "alias", "status"]),
    "get_all_status": ("/api/v1/sessions", "get", "200", None),
    "get_session_status": ("/api/v1/sessions/{alias}", "get", "200", None),
    "get_inbox": ("/api/v1/sessions/{alias}/inbox", "get", "200", None),
    "ack_inbox": ("/api/v1/sessions/{alias}/inbox/{message_id}/ack", "post", "200", []),
    "report_completion": ("/api/v1/completions", "post", "201", ["alias", "task", "result"]),
    "get_completions": ("/api/v1/completions", "get", "200", None),
    "send_task": ("/api/v1/tasks", "post", "201", ["alias", "task"]),
    "list_tasks": ("/api/v1/tasks", "get", "200", None),
    "get_task": ("/api/v1/tasks/{task_id}", "get", "200", None),
    "get_thread": ("/api/v1/tasks/{task_id}/thread", "get", "200", None),
    "search": ("/api/v1/search", "get", "200", None),
    "send_ack": ("/api/v1/tasks/{task_id}/ack", "post", "200", []),
    "retry_task": ("/api/v1/tasks/{task_id}/retry", "post", "200", []),
    "cancel_task": ("/api/v1/tasks/{task_id}/cancel", "post", "200", []),
    "reassign_task": ("/api/v1/tasks/{task_id}/reassign", "post", "200", ["new_alias"]),
    "send_message": ("/api/v1/messages", "post", "201", ["alias", "message"]),
    "send_reply": ("/api/v1/replies", "post", "201", ["alias", "text"]),
    "broadcast": ("/api/v1/broadcasts", "post", "201", ["message"]),
    # Beyond the contract: skills and the open pool.
    "find_agents": ("/api/v1/agents", "get", "200", None),
    "list_open_tasks": ("/api/v1/pool", "get", "200", None),
    "claim_task": ("/api/v1/tasks/{task_id}/claim", "post", "200", ["alias"]),
    # Beyond the contract: questions to a person.
    "ask_operator": ("/api/v1/tasks/{task_id}/questions", "post", "201", ["question"]),
    "list_questions": ("/api/v1/questions", "get", "200", None),
    "answer_question": ("/api/v1/questions/{question_id}/answer", "post", "200", ["answer"]),
    # Beyond the contract: approvals.
    "list_approvals": ("/api/v1/approvals", "get", "200", None),
    "decide_approval": ("/api/v1/approvals/{approval_id}/decide", "post", "200", ["decision"]),
    # Beyond the contract: channels.
    "channel_list": ("/api/v1/channels", "get", "200", None),
    "channel_create": ("/api/v1/channels", "post", "201", ["name", "alias"]),
    "channel_info": ("/api/v1/channels/{channel_id}", "get", "200", None),
    "channel_join": ("/api/v1/channels/{channel_id}/join", "post", "200", ["alias"]),
    "channel_leave": ("/api/v1/channels/{channel_id}/leave", "post", "200", ["alias"]),
    "channel_configure": ("/api/v1/channels/{channel_id}/configure", "post", "200", []),
    "channel_read": ("/api/v1/channels/{channel_id}/posts", "get", "200", None),
    "channel_post": ("/api/v1/channels/{channel_id}/posts", "post", "201", ["alias", "content"]),
    # Beyond the contract: nodes.
    "report_node": ("/api/v1/nodes/report", "post", "200", ["node_id"]),
    "list_nodes": ("/api/v1/nodes", "get", "200", None),
    "node_command": ("/api/v1/nodes/commands", "post", "200", ["node_id", "kind"]),
    "node_command_ack": ("/api/v1/nodes/commands/{command_id}/ack", "post", "200", ["ok"]),
    "node_commands": ("/api/v1/nodes/commands", "get", "200", None),
    # Beyond the contract: recurring schedules.
    "schedule_list": ("/api/v1/schedules", "get", "200", None),
    "schedule_create": ("/api/v1/schedules", "post", "201", ["name", "task"]),
    "schedule_pause": ("/api/v1/schedules/{schedule_id}/pause", "post", "200", []),
    "schedule_resume": ("/api/v1/schedules/{schedule_id}/resume", "post", "200", []),
    "schedule_run_now": ("/api/v1/schedules/{schedule_id}/run", "post", "200", []),
    "schedule_delete": ("/api/v1/schedules/{schedule_id}/delete", "post", "200", []),
    # Beyond the contract: concurrency caps.
    "cap_list": ("/api/v1/caps", "get", "200", None),
    "cap_set": ("/api/v1/caps", "post", "200", ["scope", "limit"]),
    "cap_delete": ("/api/v1/caps/{cap_id}/delete", "post", "200", []),
    # Beyond the contract: budgets.
    "budget_list": ("/api/v1/budgets", "get", "200", None),
    "budget_set": ("/api/v1/budgets", "post", "200", ["period"]),
    "budget_delete": ("/api/v1/budgets/{budget_id}/delete", "post", "200", []),
    # GET sessions/report is the session named "report", which sessions/{alias} cannot reach.
    "get_session_status_report": ("/api/v1/sessions/report", "get", "200", None),
    # Beyond the tools: webhooks, for owners and admins (REST only).
    "webhook_list": ("/api/v1/webhooks", "get", "200", None),
    "webhook_create": ("/api/v1/webhooks", "post", "201", ["url"]),
    "webhook_enable": ("/api/v1/webhooks/{webhook_id}/enable", "post", "200", []),
    "webhook_disable": ("/api/v1/webhooks/{webhook_id}/disable", "post", "200", []),
    "webhook_delete": ("/api/v1/webhooks/{webhook_id}/delete", "post", "200", []),
    "webhook_deliveries": ("/api/v1/webhooks/{webhook_id}/deliveries", "get", "200", None),
    # Beyond the tools: who the caller's token is (its binding and networks), as a node asks at start.
    "whoami": ("/api/v1/whoami", "get", "200", None),
}
# Creates with no idempotent repeat: they answer 201 and never 200.
NOT_REPEATABLE = {"webhook_create", "schedule_create"}
QUERY_PARAMETERS = {
    "get_all_status": {"filter_status", "filter_server", "network_id", "limit", "cursor"},
    "get_session_status": {"network_id"},
    "get_session_status_report": {"network_id"},
    "get_inbox": {"limit", "network_id", "wait_seconds"},
    "get_completions": {"alias", "since", "network_id", "limit"},
    "list_tasks": {"alias", "status", "from_name", "network_id", "limit", "dead_letter", "blocked"},
    "get_task": set(),
    "get_thread": set(),
    "search": {"query", "kinds", "alias", "since", "network_id", "limit"},
    "find_agents": {"skill", "status", "network_id"},
    "list_open_tasks": {"alias", "skill", "network_id", "limit"},
    "list_questions": {"task_id", "unanswered", "network_id", "limit"},
    "list_approvals": {"status", "approval_id", "network_id", "limit"},
    "channel_list": {"alias", "type", "name", "network_id", "limit"},
    "channel_info": set(),
    "channel_read": {"alias", "after", "since", "limit"},
    "webhook_list": {"network_id"},
    "webhook_deliveries": {"limit"},
    "list_nodes": {"network_id"},
    "node_commands": {"node_id", "command_id", "limit", "network_id"},
    "schedule_list": {"schedule_id", "network_id", "limit"},
    "cap_list": {"network_id"},
    "budget_list": {"network_id"},
    "whoami": set(),
}
REFUSALS = ["400", "401", "403", "404", "409"]


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    response = Client().get("/api/v1/schema", {"format": "json"})
    assert response.status_code == 200, response.content
    return json.loads(response.content)


def operation(schema: dict[str, Any], operation_id: str) -> dict[str, Any]:
    path, method, *_ = OPERATIONS[operation_id]
    return schema["paths"][path][method]


def as_json_schema(node: Any) -> Any:
    """OpenAPI 3.0's `nullable: true` spelled as JSON Schema, to validate real responses with."""
    if isinstance(node, list):
        return [as_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: as_json_schema(value) for key, value in node.items() if key != "nullable"}
    if node.get("nullable") and "type" in converted:
        converted["type"] = [converted["type"], "null"]
    return converted


# --- the schema as a document --------------------------------------------------------------------


def test_the_schema_generates_and_validates_without_warnings(tmp_path: Path) -> None:
    target = tmp_path / "s.yaml"

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))

    document = yaml.safe_load(target.read_text())
    assert document["openapi"].startswith("3.")
    assert len([op for ops in document["paths"].values() for op in ops.values()]) == len(OPERATIONS)


@pytest.mark.parametrize(
    ("query", "headers", "content_type", "load"),
    [
        ({"format": "json"}, {}, "application/vnd.oai.openapi+json", json.loads),
        ({}, {"Accept": "application/json"}, "application/json", json.loads),
        ({}, {}, "application/vnd.oai.openapi", yaml.safe_load),
    ],
)
def test_the_schema_is_served_without_a_token_as_json_or_yaml(
    client: Client, query: dict, headers: dict, content_type: str, load: Any
) -> None:
    response = client.get("/api/v1/schema", query, headers=headers)

    assert response.status_code == 200
    assert response["Content-Type"].split(";")[0] == content_type
    assert load(response.content)["openapi"].startswith("3.")


def test_every_tool_is_exactly_one_operation_on_its_path_and_method(schema: dict[str, Any]) -> None:
    served = {
        op["operationId"]: (path, method)
        for path, operations in schema["paths"].items()
        for method, op in operations.items()
    }

    assert served == {name: (path, method) for name, (path, method, *_) in OPERATIONS.items()}


@pytest.mark.parametrize("operation_id", sorted(OPERATIONS))
def test_each_operation_documents_its_success_status(schema: dict[str, Any], operation_id: str) -> None:
    _, _, success, _ = OPERATIONS[operation_id]
    responses = operation(schema, operation_id)["responses"]

    assert responses[success]["content"]["application/json"]["schema"]["properties"]["ok"]["type"] == "boolean"
    # A create answers 201, and 200 only for an idempotent repeat; nothing else documents 201.
    assert ("200" in responses) == (operation_id not in NOT_REPEATABLE)
    assert ("201" in responses) == (success == "201")


@pytest.mark.parametrize("operation_id", sorted(OPERATIONS))
def test_each_operation_documents_its_refusals_in_the_error_format(schema: dict[str, Any], operation_id: str) -> None:
    responses = operation(schema, operation_id)["responses"]

    for status in REFUSALS:
        error = responses[status]["content"]["application/json"]["schema"]
        assert error["required"] == ["ok", "error", "message"], status
        assert error["properties"]["ok"] == {"type": "boolean", "enum": [False]}, status
        assert {"error", "message", "field"} <= set(error["properties"]), status
        assert responses[status]["description"], status


@pytest.mark.parametrize("operation_id", sorted(name for name, spec in OPERATIONS.items() if spec[1] == "post"))
def test_a_post_body_is_required_exactly_when_it_has_required_fields(schema: dict[str, Any], operation_id: str) -> None:
    _, _, _, required = OPERATIONS[operation_id]
    body = operation(schema, operation_id)["requestBody"]
    fields = body["content"]["application/json"]["schema"]

    assert body.get("required", False) is bool(required)
    assert fields.get("required", []) == required
    assert fields["additionalProperties"] is False
    # Path arguments come from the URL only: the body does not offer them.
    path_arguments = set(re.findall(r"{(\w+)}", OPERATIONS[operation_id][0]))
    assert not path_arguments & set(fields["properties"])


@pytest.mark.parametrize("operation_id", sorted(QUERY_PARAMETERS))
def test_a_get_takes_its_arguments_from_the_path_and_query(schema: dict[str, Any], operation_id: str) -> None:
    op = operation(schema, operation_id)
    parameters = {(p["in"], p["name"]): p for p in op.get("parameters", [])}
    path_arguments = set(re.findall(r"{(\w+)}", OPERATIONS[operation_id][0]))

    assert "requestBody" not in op
    assert {name for where, name in parameters if where == "query"} == QUERY_PARAMETERS[operation_id]
    assert {name for where, name in parameters if where == "path"} == path_arguments
    assert all(parameters[("path", name)]["required"] for name in path_arguments)


def test_bearer_tokens_are_a_security_scheme_of_every_operation(schema: dict[str, Any]) -> None:
    bearer = schema["components"]["securitySchemes"]["bearerAuth"]

    assert (bearer["type"], bearer["scheme"]) == ("http", "bearer")
    for operation_id in OPERATIONS:
        assert {"bearerAuth": []} in operation(schema, operation_id)["security"], operation_id


# --- the schema against real answers -------------------------------------------------------------


@pytest.fixture
def headers(network: Network) -> dict[str, str]:
    _, raw = token_create(network=network, role="member")
    report_status(
        actor=token_authenticate(raw=raw), resume_id="r-coder", alias="coder", status="idle", skills=["python"]
    )
    return {"Authorization": f"Bearer {raw}"}


def test_real_answers_match_their_documented_responses(
    client: Client, schema: dict[str, Any], network: Network, headers: dict[str, str]
) -> None:
    _, viewer_raw = token_create(network=network, role="viewer")

    def call(operation_id: str, path: str, body: Any = None, *, using: dict[str, str] = headers, **query: Any):
        if body is None:
            response = client.get(path, query, headers=using)
        else:
            response = client.post(path, json.dumps(body), content_type="application/json", headers=using)
        documented = operation(schema, operation_id)["responses"][str(response.status_code)]
        jsonschema.validate(response.json(), as_json_schema(documented["content"]["application/json"]["schema"]))
        return response

    sent = call("send_task", "/api/v1/tasks", {"alias": "coder", "task": "t", "client_request_id": "k"})
    task_id = sent.json()["task_id"]
    answers = [
        sent,
        call("send_task", "/api/v1/tasks", {"alias": "coder", "task": "t", "client_request_id": "k"}),
        call("get_task", f"/api/v1/tasks/{task_id}"),
        call("list_tasks", "/api/v1/tasks"),
        call("get_all_status", "/api/v1/sessions"),
        call("get_session_status", "/api/v1/sessions/coder"),
        call("get_inbox", "/api/v1/sessions/coder/inbox"),
        call("report_completion", "/api/v1/completions", {"alias": "coder", "task": "other", "result": "r"}),
        call("get_completions", "/api/v1/completions"),
        call("cancel_task", f"/api/v1/tasks/{task_id}/cancel", {}),
        call("cancel_task", f"/api/v1/tasks/{task_id}/cancel", {}),
        call("list_tasks", "/api/v1/tasks", limit="abc"),
        call("get_task", "/api/v1/tasks/missing"),
        call("get_task", "/api/v1/tasks/missing", using={}),
        call("broadcast", "/api/v1/broadcasts", {"message": "m"}, using={"Authorization": f"Bearer {viewer_raw}"}),
    ]
    open_id = call("send_task", "/api/v1/tasks", {"alias": "pool", "task": "o", "required_skills": ["python"]})
    answers += [
        open_id,
        call("find_agents", "/api/v1/agents", skill="python"),
        call("list_open_tasks", "/api/v1/pool", alias="coder"),
        call("claim_task", f"/api/v1/tasks/{open_id.json()['task_id']}/claim", {"alias": "coder"}),
        call("claim_task", f"/api/v1/tasks/{open_id.json()['task_id']}/claim", {"alias": "coder"}),
        call("list_open_tasks", "/api/v1/pool", limit=0),
    ]

    assert [answer.status_code for answer in answers] == [
        201,
        200,
        200,
        200,
        200,
        200,
        200,
        201,
        200,
        200,
        409,
        400,
        404,
        401,
        403,
        201,
        200,
        200,
        200,
        409,
        400,
    ]


def test_real_webhook_answers_match_their_documented_responses(
    client: Client, schema: dict[str, Any], network: Network, settings
) -> None:
    settings.COMMHUB_WEBHOOKS_ALLOW_PRIVATE = True
    admin = {"Authorization": f"Bearer {token_create(network=network, role='admin')[1]}"}
    member = {"Authorization": f"Bearer {token_create(network=network, role='member')[1]}"}

    def call(operation_id: str, path: str, body: Any = None, *, using: dict[str, str] = admin, **query: Any):
        if body is None:
            response = client.get(path, query, headers=using)
        else:
            response = client.post(path, json.dumps(body), content_type="application/json", headers=using)
        documented = operation(schema, operation_id)["responses"][str(response.status_code)]
        jsonschema.validate(response.json(), as_json_schema(documented["content"]["application/json"]["schema"]))
        return response

    made = call("webhook_create", "/api/v1/webhooks", {"url": "http://127.0.0.1:9/hook", "event_types": ["new_task"]})
    path = f"/api/v1/webhooks/{made.json()['webhook_id']}"
    answers = [
        made,
        call("webhook_list", "/api/v1/webhooks"),
        call("webhook_disable", f"{path}/disable", {}),
        call("webhook_deliveries", f"{path}/deliveries"),
        call("webhook_list", "/api/v1/webhooks", using=member),
        call("webhook_create", "/api/v1/webhooks", {"url": "ftp://x"}),
        call("webhook_deliveries", f"{path}/deliveries", limit=0),
        call("webhook_delete", f"{path}/delete", {}),
        call("webhook_enable", f"{path}/enable", {}),
    ]
    settings.COMMHUB_WEBHOOKS_ALLOW_PRIVATE = False
    answers.append(call("webhook_create", "/api/v1/webhooks", {"url": "http://127.0.0.1:9/hook"}))

    assert [answer.status_code for answer in answers] == [201, 200, 200, 200, 403, 400, 400, 200, 404, 409]


# --- the docs page and the health check ----------------------------------------------------------


def test_the_docs_page_loads_swagger_ui_from_local_static_files_only(client: Client) -> None:
    response = client.get("/api/v1/docs")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assets = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert any(asset.endswith("swagger-ui-bundle.js") for asset in assets)
    assert any(asset.endswith(".css") for asset in assets)
    start_up = "/api/v1/docs?script="  # the page's own script, served apart for the CSP (no inline script)
    for asset in assets:
        if asset == start_up:
            continue
        assert asset.startswith("/static/"), asset
        assert finders.find(asset.removeprefix("/static/")), f"{asset} is not a static file of the project"
    assert start_up in assets
    script = client.get(start_up).content.decode()
    for text in (page, script):
        assert not re.search(r"https?://|//cdn|unpkg|jsdelivr", text)
    assert '"/api/v1/schema"' in script


def test_healthz_answers_ok_without_a_token_and_names_nothing_else(client: Client, headers: dict[str, str]) -> None:
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"ok": True, "database": "ok"}
    assert b"coder" not in response.content
