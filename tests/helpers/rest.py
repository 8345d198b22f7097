"""Answers of the REST API (/api/v1/) as a client reads them."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse
from django.test import Client

from hub_agents.models import Network
from hub_agents.services import token_create

API = "/api/v1/"


class Api:
    """A script calling the REST API with a network token of one role."""

    def __init__(self, client: Client, network: Network, role: str) -> None:
        self.client = client
        self.token = token_create(network=network, role=role, name=f"{role}-script")[1]
        self.headers = {"Authorization": f"Bearer {self.token}"}

    def get(self, path: str, **query: Any) -> Any:
        return self.client.get(API + path, query, headers=self.headers)

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self.client.post(
            API + path, json.dumps(body or {}), content_type="application/json", headers=self.headers
        )


def assert_refused(response: HttpResponse, status: int, error: str, **extra: Any) -> dict[str, Any]:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["ok"] is False
    assert body["error"] == error
    assert isinstance(body["message"], str) and body["message"]
    for key, value in extra.items():
        assert body[key] == value, (key, body)
    return body
