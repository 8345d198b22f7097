"""Outbound webhooks: a network's subscriptions and every delivery attempt made for them.

A subscription reads the network's operators' feed (hub_events) from its cursor; nothing else
holds what is still to send, so a crash or restart loses nothing (docs/adr/0018).
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from hub_agents.models import Network


class Subscription(models.Model):
    class State(models.TextChoices):
        ACTIVE = "active"
        DISABLED = "disabled"

    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="webhook_subscriptions")
    url = models.URLField(max_length=2000)
    # Event types to send (hub_core.events.EventType values); empty sends every type.
    event_types = models.JSONField(default=list, blank=True)
    # Only events whose `to` holds this alias; blank sends every event.
    alias = models.CharField(max_length=200, blank=True)
    # Needed in clear to sign each request, so stored; shown once at creation, never again.
    secret = models.CharField(max_length=100, editable=False)
    state = models.CharField(max_length=16, choices=State.choices, default=State.ACTIVE)
    disabled_reason = models.CharField(max_length=500, blank=True)
    # The last feed seq delivered (2xx) or passed over (filtered out, pruned): the next event
    # sent is the first after it. Set to the feed's end at creation: history is not replayed.
    cursor = models.BigIntegerField(default=0)
    # When the event at the cursor was written: lets the deliverer tell cheaply whether the log
    # can have pruned events after the cursor (only when this is older than the retention).
    cursor_at = models.DateTimeField(default=timezone.now)
    # The head event's retry state: failed attempts so far, when to try again, when the unbroken
    # run of failures began (null while deliveries succeed).
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    failing_since = models.DateTimeField(null=True, blank=True)
    last_delivered_at = models.DateTimeField(null=True, blank=True)
    # The deliverer working on it, until when (a lease, not a row lock: the POST happens outside
    # any transaction; a killed deliverer's lease runs out and the next one takes over).
    lease_owner = models.CharField(max_length=100, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    created_by = models.CharField(max_length=300)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        indexes = [models.Index(fields=["state", "next_attempt_at"], name="webhook_due")]

    def __str__(self) -> str:
        return f"{self.url} ({self.state})"

    def wants(self, *, type: str, to: list[str]) -> bool:
        """Whether an event of this type, addressed to these aliases, is sent to this subscription."""
        if self.event_types and type not in self.event_types:
            return False
        return not self.alias or self.alias in to


class Delivery(models.Model):
    """One attempt to POST one event (or a test event, or a note that events were skipped)."""

    class Outcome(models.TextChoices):
        DELIVERED = "delivered"  # a 2xx answer
        FAILED = "failed"  # another status, or no answer (error says why)
        REFUSED = "refused"  # not sent: the URL's address is not allowed
        SKIPPED = "skipped"  # a note: events the log pruned before they could be sent
        DISABLED = "disabled"  # a note: the subscription was switched off after failing too long

    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE, related_name="deliveries")
    event_seq = models.BigIntegerField(null=True, blank=True, help_text="Blank for a test event.")
    event_type = models.CharField(max_length=32)
    attempt = models.PositiveIntegerField(default=1)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    response_excerpt = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "deliveries"
        indexes = [
            models.Index(fields=["subscription", "-id"], name="delivery_newest"),
            models.Index(fields=["created_at"], name="delivery_age"),
        ]

    def __str__(self) -> str:
        return f"#{self.event_seq} {self.event_type} attempt {self.attempt}: {self.outcome}"
