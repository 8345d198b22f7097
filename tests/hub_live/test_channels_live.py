"""A channel post reaches a member's /events stream against a live hub (issue 18): the owner creates
a channel over REST with a member, another member posts over MCP, and the first member's SSE stream
pushes a channel_post with the post's position and content; the sender's own stream does not."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from hub_events.selectors import events_position
from tests.helpers.live import rest, sse_events

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_post_reaches_a_members_event_stream(hub_server, agent_http, network):
    hub = hub_server()
    created = rest(
        hub, agent_http, "POST", "/channels", json={"name": "backend", "alias": "lead", "members": ["coder"]}
    )
    start = events_position(network_id=network.id)
    posted: dict[str, Any] = {}

    def post() -> None:
        posted.update(
            agent_http.mcp(hub, "channel_post", channel_id=created["channel_id"], alias="coder", content="schema ready")
        )

    stream = sse_events(hub, agent_http, "lead", last_event_id=start)
    poster = threading.Thread(target=post, daemon=True)
    poster.start()
    frame = next(frame for _, kind, frame in stream if kind == "channel_post")
    stream.close()
    poster.join(timeout=30)

    assert posted["ok"] and frame["payload"]["seq"] == posted["seq"] == 1
    assert (frame["payload"]["channel_id"], frame["payload"]["sender"], frame["payload"]["content"]) == (
        created["channel_id"],
        "coder",
        "schema ready",
    )
    assert frame["to"] == ["lead"]  # the sender is not pushed its own post
