"""Reading outbound webhooks, scoped to the networks the caller administers."""

from __future__ import annotations

from django.db.models import QuerySet

from hub_agents.actors import Actor
from hub_core.errors import HubError, permission_denied
from hub_webhooks.models import Delivery, Subscription

DELIVERIES_SHOWN = 200
DELIVERIES_DEFAULT = 50  # what REST answers when no limit is asked for


def _admins_only(network_id: str) -> HubError:
    return permission_denied(f"Only the owners and admins of network {network_id} see and manage its webhooks.")


def webhook_subscriptions(*, actor: Actor, network_id: str) -> QuerySet[Subscription]:
    if not actor.can_administer(network_id):
        raise _admins_only(network_id)
    return Subscription.objects.filter(network_id=network_id).order_by("pk")


def webhook_list(*, actor: Actor, network_id: str | None = None) -> list[Subscription]:
    """The webhooks of every network the actor administers, or of the one it names (403 if it is not a
    member there, or not an owner or admin), by network then age."""
    networks = actor.readable_networks(network_id)
    administered = [network for network in networks if actor.can_administer(network)]
    if not administered:
        if network_id is not None:
            raise _admins_only(network_id)
        raise permission_denied("Only a network's owners and admins see its webhooks; you administer no network.")
    return list(Subscription.objects.filter(network_id__in=administered).order_by("network_id", "pk"))


def webhook_get(*, actor: Actor, network_id: str, subscription_id: int) -> Subscription:
    found = webhook_subscriptions(actor=actor, network_id=network_id).filter(pk=subscription_id).first()
    if found is None:
        raise webhook_not_found(subscription_id, f"in network {network_id}")
    return found


def webhook_administered(*, actor: Actor, subscription_id: int) -> Subscription:
    """A subscription in any of the actor's networks, which it must administer: 404 for one in no
    network of the actor's (another network's are not told apart from none), 403 for one in a
    network where it is a member or viewer."""
    found = Subscription.objects.filter(pk=subscription_id, network_id__in=list(actor.roles)).first()
    if found is None:
        raise webhook_not_found(subscription_id, "in your networks")
    if not actor.can_administer(found.network_id):
        raise _admins_only(found.network_id)
    return found


def webhook_not_found(subscription_id: int, where: str) -> HubError:
    return HubError(
        "webhook_not_found",
        f"No webhook {subscription_id} {where}: it may have been deleted (list them to see their ids).",
        status=404,
    )


def webhook_deliveries(*, subscription: Subscription, limit: int = DELIVERIES_SHOWN) -> list[Delivery]:
    """The latest attempts and notes, newest first."""
    return list(subscription.deliveries.order_by("-id")[:limit])


def webhook_history(
    *, actor: Actor, webhook_id: int, limit: int = DELIVERIES_DEFAULT
) -> tuple[Subscription, list[Delivery]]:
    """A subscription the actor administers and its latest deliveries, newest first."""
    subscription = webhook_administered(actor=actor, subscription_id=webhook_id)
    return subscription, webhook_deliveries(subscription=subscription, limit=limit)


def webhook_cursors() -> list[tuple[str, int, int]]:
    """(network_id, subscription id, cursor) of every active subscription (/metrics: its lag)."""
    active = Subscription.objects.filter(state=Subscription.State.ACTIVE).order_by("network_id", "pk")
    return list(active.values_list("network_id", "pk", "cursor"))
