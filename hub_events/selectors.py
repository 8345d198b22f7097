"""Reading the event log: what an audience has not seen yet."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from django.db.models import Count, Max, QuerySet

from hub_events.models import Event, EventCounter

PAGE = 500


def events_after(*, network_id: str, audience: str, after: int, limit: int = PAGE) -> list[dict[str, Any]]:
    """The audience's sealed events with seq > after, oldest first, as frames."""
    return [event.as_frame() for event in _feed(network_id, audience, after)[:limit]]


def events_after_traced(
    *, network_id: str, audience: str, after: int, limit: int = PAGE
) -> list[tuple[dict[str, Any], str]]:
    """events_after, each frame with the trace context it was published in ("" if none), for the
    span of its delivery; the context is never part of the frame."""
    return [(event.as_frame(), event.trace) for event in _feed(network_id, audience, after)[:limit]]


def feeds_after_traced(
    *, network_id: str, audiences: Collection[str], after: int, upto: int | None = None, limit: int = PAGE
) -> list[tuple[str, dict[str, Any], str]]:
    """Several audiences' sealed events with after < seq (<= upto, if given), oldest first, each as
    (audience, frame, trace context): one read for all the streams of a network in one process
    (hub_live.fanout)."""
    events = Event.objects.filter(network_id=network_id, audience__in=list(audiences), seq__gt=after)
    if upto is not None:
        events = events.filter(seq__lte=upto)
    return [(event.audience, event.as_frame(), event.trace) for event in events.order_by("seq")[:limit]]


def _feed(network_id: str, audience: str, after: int) -> QuerySet[Event]:
    return Event.objects.filter(network_id=network_id, audience=audience, seq__gt=after).order_by("seq")


def events_position(*, network_id: str) -> int:
    """The network's newest seq: where a reader that wants only what comes next starts."""
    return Event.objects.filter(network_id=network_id).aggregate(last=Max("seq"))["last"] or 0


def feed_head(*, network_id: str, audience: str) -> int:
    """The newest position in one audience's feed (its index's last entry): where a reader that has
    delivered everything stands."""
    newest = _feed(network_id, audience, 0).order_by("-seq").values_list("seq", flat=True).first()
    return newest or 0


def feed_heads() -> list[tuple[str, int, int]]:
    """(network_id, newest position, events committed but not sealed yet) for every network with a
    log (/metrics): the counter rows, and a count over the unsealed rows' partial index."""
    unsealed = dict(
        Event.objects.filter(seq__isnull=True)
        .values("network_id")
        .annotate(n=Count("id"))
        .values_list("network_id", "n")
    )
    heads = dict(EventCounter.objects.values_list("network_id", "last_seq"))
    return [
        (network, heads.get(network, 0), unsealed.get(network, 0)) for network in sorted(heads.keys() | unsealed.keys())
    ]
