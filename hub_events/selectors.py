"""Reading the event log: what an audience has not seen yet."""

from __future__ import annotations

from typing import Any

from django.db.models import Max

from hub_events.models import Event

PAGE = 500


def events_after(*, network_id: str, audience: str, after: int, limit: int = PAGE) -> list[dict[str, Any]]:
    """The audience's sealed events with seq > after, oldest first, as frames."""
    events = Event.objects.filter(network_id=network_id, audience=audience, seq__gt=after).order_by("seq")
    return [event.as_frame() for event in events[:limit]]


def events_position(*, network_id: str) -> int:
    """The network's newest seq: where a reader that wants only what comes next starts."""
    return Event.objects.filter(network_id=network_id).aggregate(last=Max("seq"))["last"] or 0
