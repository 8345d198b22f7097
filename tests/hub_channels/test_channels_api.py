"""Channels over REST (/api/v1/channels...): the same tools, statuses that say why a call was refused,
and what another network's member gets (404, nothing of the channel)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from hub_agents.services import token_create
from tests.helpers.rest import assert_refused

pytestmark = pytest.mark.django_db

API = "/api/v1/"


def caller(network, role: str = "member"):
    headers = {"Authorization": f"Bearer {token_create(network=network, role=role, name=role)[1]}"}
    client = Client()

    def call(method: str, path: str, body: dict[str, Any] | None = None):
        if method == "get":
            return client.get(API + path, body or {}, headers=headers)
        return client.post(API + path, json.dumps(body or {}), content_type="application/json", headers=headers)

    return call


def test_a_channel_is_created_joined_posted_to_and_read_over_rest(network):
    call = caller(network)

    created = call("post", "channels", {"name": "backend", "alias": "lead", "members": ["coder"]})
    channel_id = created.json()["channel_id"]
    joined = call("post", f"channels/{channel_id}/join", {"alias": "reviewer"})
    posts = [call("post", f"channels/{channel_id}/posts", {"alias": "coder", "content": f"n{n}"}) for n in range(5)]
    page = call("get", f"channels/{channel_id}/posts", {"alias": "lead", "after": 2, "limit": 2})
    rest = call("get", f"channels/{channel_id}/posts", {"alias": "lead", "after": page.json()["next_after"]})

    assert (created.status_code, joined.status_code) == (201, 200)
    assert [response.status_code for response in posts] == [201] * 5
    assert [p["content"] for p in page.json()["posts"]] == ["n2", "n3"]
    assert [p["seq"] for p in rest.json()["posts"]] == [5]
    info = call("get", f"channels/{channel_id}").json()
    assert (info["member_count"], info["last_seq"]) == (3, 5)
    assert [row["name"] for row in call("get", "channels", {"alias": "reviewer"}).json()["channels"]] == ["backend"]
    left = call("post", f"channels/{channel_id}/leave", {"alias": "reviewer"})
    configured = call("post", f"channels/{channel_id}/configure", {"alias": "lead", "retention_max_posts": 2})
    assert (left.status_code, left.json()["members"]) == (200, 2)
    assert (configured.status_code, configured.json()["removed"]) == (200, 3)


def test_refusals_over_rest_say_why_with_their_status(network, other_network):
    call = caller(network)
    channel_id = call("post", "channels", {"name": "ops", "alias": "lead", "max_message_bytes": 8}).json()["channel_id"]
    posts = f"channels/{channel_id}/posts"

    assert_refused(
        call("post", "channels", {"name": "ops", "alias": "x"}), 409, "channel_exists", channel_id=channel_id
    )
    assert_refused(call("get", posts, {"alias": "stranger"}), 403, "not_a_member")
    assert_refused(call("post", posts, {"alias": "lead", "content": "x" * 9}), 409, "message_too_large")
    assert_refused(
        call("get", posts, {"alias": "lead", "since": "last tuesday"}), 400, "invalid_argument", field="since"
    )
    assert_refused(call("get", posts, {"alias": "lead", "after": "-1"}), 400, "invalid_argument", field="after")
    assert_refused(call("post", f"channels/{channel_id}/join", {"alias": "lead"}), 409, "already_member")
    assert_refused(call("get", "channels/chn_0000000000000000"), 404, "channel_not_found")
    viewer = caller(network, "viewer")
    assert_refused(viewer("post", posts, {"alias": "lead", "content": "hi"}), 403, "permission_denied")

    outsider = caller(other_network)
    for method, path, body in [
        ("get", f"channels/{channel_id}", None),
        ("get", posts, {"alias": "lead"}),
        ("post", posts, {"alias": "lead", "content": "intrusion"}),
        ("post", f"channels/{channel_id}/join", {"alias": "spy"}),
        ("post", f"channels/{channel_id}/configure", {"alias": "lead", "description": "mine"}),
    ]:
        refusal = assert_refused(outsider(method, path, body), 404, "channel_not_found")
        assert "ops" not in refusal["message"]
    assert outsider("get", "channels").json()["channels"] == []
