"""The events hub_webhooks publishes (hub_core.events.EventPayload)."""

from __future__ import annotations

from dataclasses import dataclass

from hub_core.events import EventPayload, EventType, Touch


@dataclass(frozen=True)
class WebhookDisabled(EventPayload):
    """To the operators: an outbound webhook subscription failed for too long and was switched off;
    failing_since: when its unbroken failures began; reason: the last failure."""

    event_type = EventType.WEBHOOK_DISABLED
    touches = (Touch("fleet", audience=True),)

    subscription_id: int
    url: str
    reason: str
    failing_since: str
