"""The events hub_channels publishes (hub_core.events.EventPayload)."""

from __future__ import annotations

from dataclasses import dataclass

from hub_core.events import EventPayload, EventType, Touch


@dataclass(frozen=True)
class ChannelPost(EventPayload):
    """To a channel's members but the sender (of a pub/sub channel: its subscribers), a post at
    position seq; content cut short when long (truncated: read it whole with channel_read after
    seq - 1)."""

    event_type = EventType.CHANNEL_POST
    # The index's row (its last post and position), and the posts of the channel the page shows.
    touches = (Touch("fleet", audience=True), Touch("channels"), Touch("channel_posts", subject=("channel_id",)))

    channel_id: str
    name: str
    channel_type: str
    seq: int
    sender: str
    kind: str
    content: str
    truncated: bool
