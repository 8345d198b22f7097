"""GET /api/v1/whoami: who the caller's token is (its binding, its networks' roles and identity policies),
as a node asks before it starts its agents; the answer is the one the OpenAPI schema documents."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from django.test import Client

from hub_agents.models import Network
from hub_agents.services import membership_set, network_policy_set, token_create, token_revoke, user_get_or_create
from tests.helpers.rest import assert_refused

pytestmark = pytest.mark.django_db


def whoami(client: Client, raw: str | None, **query: Any) -> Any:
    headers = {"Authorization": f"Bearer {raw}"} if raw else {}
    return client.get("/api/v1/whoami", query, headers=headers)


def documented(client: Client, status: int) -> dict[str, Any]:
    """The response schema /api/v1/schema documents, as JSON Schema (OpenAPI's nullable left out)."""
    document = client.get("/api/v1/schema", {"format": "json"}).json()
    return document["paths"]["/api/v1/whoami"]["get"]["responses"][str(status)]["content"]["application/json"]["schema"]


def test_a_node_token_answers_its_binding_and_its_strict_network(client: Client, network: Network) -> None:
    network_policy_set(network=network, policy="strict", by="test")
    token, raw = token_create(network=network, role="member", name="node-a", aliases="build-1, build-2,review-*")

    answer = whoami(client, raw)

    assert answer.status_code == 200, answer.content
    assert answer["Cache-Control"] == "no-store"
    assert answer.json() == {
        "ok": True,
        "label": f"{token.prefix} (node-a)",
        "kind": "network",
        "names": ["token:node-a"],
        "aliases": ["build-1", "build-2", "review-*"],
        "networks": [{"network_id": network.pk, "name": "alpha", "role": "member", "identity_policy": "strict"}],
    }
    jsonschema.validate(answer.json(), documented(client, 200))


def test_an_unbound_token_answers_no_alias_and_a_policy_changed_since_is_seen(client: Client, network: Network) -> None:
    _, raw = token_create(network=network, role="admin")
    before = whoami(client, raw).json()

    network_policy_set(network=network, policy="strict", by="test")
    after = whoami(client, raw).json()

    assert before["aliases"] == after["aliases"] == []
    assert [n["role"] for n in after["networks"]] == ["admin"]
    assert before["networks"][0]["identity_policy"] == "open"
    assert after["networks"][0]["identity_policy"] == "strict"


def test_a_user_token_answers_each_network_with_its_role_and_policy(
    client: Client, network: Network, other_network: Network
) -> None:
    ana = user_get_or_create(username="ana")
    membership_set(user=ana, network=other_network, role="viewer")
    membership_set(user=ana, network=network, role="owner")
    network_policy_set(network=other_network, policy="strict", by="test")
    _, raw = token_create(user=ana, aliases=["ana-*"])

    answer = whoami(client, raw).json()

    assert (answer["kind"], answer["label"], answer["aliases"]) == ("user", "user:ana", ["ana-*"])
    assert answer["names"] == ["user:ana", "dashboard:ana"]
    assert answer["networks"] == [  # by name: alpha, beta
        {"network_id": network.pk, "name": "alpha", "role": "owner", "identity_policy": "open"},
        {"network_id": other_network.pk, "name": "beta", "role": "viewer", "identity_policy": "strict"},
    ]
    jsonschema.validate(answer, documented(client, 200))


def test_a_signed_in_user_is_a_session(client: Client, network: Network) -> None:
    bo = user_get_or_create(username="bo")
    membership_set(user=bo, network=network, role="member")
    client.force_login(bo)

    answer = whoami(client, None).json()

    assert (answer["kind"], answer["aliases"]) == ("session", [])
    assert [(n["name"], n["role"]) for n in answer["networks"]] == [("alpha", "member")]


def test_no_token_or_a_revoked_one_is_refused(client: Client, network: Network) -> None:
    token, raw = token_create(network=network, role="member")
    token_revoke(token=token)

    assert_refused(whoami(client, None), 401, "unauthorized")
    body = assert_refused(whoami(client, raw), 401, "unauthorized")
    jsonschema.validate(body, documented(client, 401))


def test_whoami_takes_no_argument(client: Client, network: Network) -> None:
    _, raw = token_create(network=network, role="member")

    assert_refused(whoami(client, raw, network_id=network.pk), 400, "invalid_argument", field="network_id")
