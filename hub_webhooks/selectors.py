"""Reading outbound webhooks, scoped to the networks the caller administers."""

from __future__ import annotations

from django.db.models import QuerySet

from hub_agents.actors import Actor
from hub_core.errors import HubError, permission_denied
from hub_webhooks.models import Delivery, Subscription

DELIVERIES_SHOWN = 200


def webhook_subscriptions(*, actor: Actor, network_id: str) -> QuerySet[Subscription]:
    if not actor.can_administer(network_id):
        raise permission_denied(f"Only the owners and admins of network {network_id} see its webhooks.")
    return Subscription.objects.filter(network_id=network_id).order_by("pk")


def webhook_get(*, actor: Actor, network_id: str, subscription_id: int) -> Subscription:
    found = webhook_subscriptions(actor=actor, network_id=network_id).filter(pk=subscription_id).first()
    if found is None:
        raise HubError(
            "webhook_not_found",
            f"No webhook {subscription_id} in network {network_id}: it may have been deleted.",
            status=404,
        )
    return found


def webhook_deliveries(*, subscription: Subscription, limit: int = DELIVERIES_SHOWN) -> list[Delivery]:
    """The latest attempts and notes, newest first."""
    return list(subscription.deliveries.order_by("-id")[:limit])


def webhook_cursors() -> list[tuple[str, int, int]]:
    """(network_id, subscription id, cursor) of every active subscription (/metrics: its lag)."""
    active = Subscription.objects.filter(state=Subscription.State.ACTIVE).order_by("network_id", "pk")
    return list(active.values_list("network_id", "pk", "cursor"))
