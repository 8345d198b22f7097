"""Answers of the REST API (/api/v1/) as a client reads them."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse


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
