"""The event log: every pushed event, written in the transaction of the change it reports.

Live delivery (SSE, websockets, long-poll) only rings a doorbell; what is delivered is read from
here, after the id the receiver last saw. So a full channel, a dropped connection or a second
server process loses nothing.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone

from hub_agents.models import Network
from hub_core.formats import timestamp

OPERATORS = ""  # the audience of the copy every network's operators receive


class Event(models.Model):
    id = models.BigAutoField(primary_key=True)
    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="events")
    # The position in the network's feed, given after commit in commit order (hub_events.services.
    # events_seal); null until then. Ids follow insert order, which concurrent transactions may
    # commit out of, so readers page by seq: having seen N, a reader never later finds a smaller one.
    seq = models.BigIntegerField(null=True, blank=True)
    audience = models.CharField(max_length=200, blank=True, help_text="An alias, or blank for operators.")
    # The aliases the event is addressed to, the same on every copy (operators see whom it concerns).
    to = models.JSONField(default=list)
    type = models.CharField(max_length=32)
    payload = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)
    # The W3C traceparent of the span that published the event, when traces are on (commhub.tracing),
    # so its deliveries join the publisher's trace; never part of a frame. 55: version 00's length.
    trace = models.CharField(max_length=55, blank=True, default="")

    class Meta:
        indexes = [
            models.Index(fields=["network", "audience", "seq"], name="event_feed"),
            models.Index(fields=["network", "id"], condition=models.Q(seq__isnull=True), name="event_unsealed"),
            models.Index(fields=["created_at"], name="event_age"),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.type} → {self.audience or 'operators'}"

    def as_frame(self) -> dict[str, Any]:
        return {
            "id": self.seq,
            "type": self.type,
            "network_id": self.network_id,
            "audience": self.audience or None,
            "to": self.to,
            "payload": self.payload,
            "created_at": timestamp(self.created_at),
        }


class EventCounter(models.Model):
    """The last seq given out in a network; its row lock orders the seals."""

    network = models.OneToOneField(Network, primary_key=True, on_delete=models.CASCADE, related_name="+")
    last_seq = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.network_id}: {self.last_seq}"
