"""Nodes over REST (issue 25 item 7): POST /api/v1/nodes/report runs report_node, GET /api/v1/nodes
list_nodes; answers match what the OpenAPI schema documents, and the schema states every limit of a
node's runtimes and agents (patterns included, which tools/list says once instead)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from django.test import Client

from hub_agents.services import token_create
from hub_core.validate import NOT_BLANK

pytestmark = pytest.mark.django_db

REPORT = {
    "node_id": "box-1",
    "node_name": "build box 1",
    "host": "box1.lan",
    "os": "Darwin 24.1 arm64",
    "runtimes": [{"name": "codex", "version": "0.58.0"}],
    "agents": [{"alias": "builder", "runtime": "codex", "concurrency": 3, "running": 2, "paused": False}],
    "slots_total": 3,
    "slots_used": 2,
}


def bearer(network, role: str = "member") -> dict[str, str]:
    return {"Authorization": f"Bearer {token_create(network=network, role=role, name=role)[1]}"}


def documented(client: Client, path: str, method: str, status: int) -> dict[str, Any]:
    document = client.get("/api/v1/schema", {"format": "json"}).json()
    return document["paths"][path][method]["responses"][str(status)]["content"]["application/json"]["schema"]


def post(client: Client, body: Any, headers: dict[str, str]):
    return client.post("/api/v1/nodes/report", json.dumps(body), content_type="application/json", headers=headers)


def test_a_node_reports_and_is_listed(client, network):
    member = bearer(network)

    reported = post(client, REPORT, member)
    listed = client.get("/api/v1/nodes", headers=bearer(network, "viewer"))

    assert reported.status_code == 200 and reported.json() == {"ok": True, "node_id": "box-1"}
    assert listed.status_code == 200
    [row] = listed.json()["nodes"]
    assert (row["node_name"], row["os"], row["slots_used"], row["slots_free"], row["online"]) == (
        "build box 1", "Darwin 24.1 arm64", 2, 1, True,
    )  # fmt: skip
    assert row["runtimes"] == REPORT["runtimes"] and row["agent_count"] == 1
    jsonschema.validate(reported.json(), documented(client, "/api/v1/nodes/report", "post", 200))
    jsonschema.validate(listed.json(), documented(client, "/api/v1/nodes", "get", 200))


def test_a_bad_agent_is_refused_with_400_naming_it(client, network):
    response = post(client, {**REPORT, "agents": [{"alias": "builder"}]}, bearer(network))

    assert response.status_code == 400
    assert (response.json()["error"], response.json()["field"]) == ("invalid_argument", "agents[0].runtime")
    assert client.get("/api/v1/nodes", headers=bearer(network)).json()["nodes"] == []


def test_an_agent_listed_twice_is_a_409_the_schema_cannot_say(client, network):
    # JSON Schema has no "unique by a field": the schema admits the body, so the hub answers 409, not 400.
    twice = {**REPORT, "agents": [REPORT["agents"][0], {**REPORT["agents"][0], "runtime": "claude"}]}

    refused = post(client, twice, bearer(network))

    assert refused.status_code == 409
    assert (refused.json()["error"], refused.json()["field"]) == ("invalid_argument", "agents")
    jsonschema.validate(twice, documented_request(client))


def documented_request(client: Client) -> dict[str, Any]:
    document = client.get("/api/v1/schema", {"format": "json"}).json()
    return document["paths"]["/api/v1/nodes/report"]["post"]["requestBody"]["content"]["application/json"]["schema"]


def test_a_viewer_is_refused_and_nothing_is_listed(client, network):
    response = post(client, REPORT, bearer(network, "viewer"))

    assert response.status_code == 403 and response.json()["error"] == "permission_denied"
    assert client.get("/api/v1/nodes", headers=bearer(network)).json()["nodes"] == []


def test_the_schema_states_each_limit_of_runtimes_and_agents(client):
    document = client.get("/api/v1/schema", {"format": "json"}).json()
    body = document["paths"]["/api/v1/nodes/report"]["post"]["requestBody"]["content"]["application/json"]["schema"]

    agents = body["properties"]["agents"]
    assert agents["maxItems"] == 500 and agents["nullable"] is True
    item = agents["items"]
    assert item["additionalProperties"] is False
    assert item["required"] == ["alias", "runtime", "concurrency", "running"]
    assert item["properties"]["alias"] == {
        "type": "string", "description": "The agent's alias.", "maxLength": 200, "minLength": 1, "pattern": NOT_BLANK,
    }  # fmt: skip
    assert item["properties"]["running"]["minimum"] == 0 and item["properties"]["paused"]["type"] == "boolean"
    assert body["properties"]["runtimes"]["items"]["properties"]["version"]["maxLength"] == 200
    assert body["required"] == ["node_id"]
    assert document["paths"]["/api/v1/nodes"]["get"]["tags"] == ["nodes"]
