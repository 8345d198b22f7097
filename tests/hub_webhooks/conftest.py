"""Webhook fixtures: a subscription made by an owner to the receiver on 127.0.0.1 (`owner`, `receiver`
and `allow_private` are tests/conftest.py's), events to send, and deliverers with short timings."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from hub_core.events import EVENT_SCHEMA, EventType, HubEvent, publish, sealed_atomic
from hub_webhooks.models import Subscription
from hub_webhooks.send import webhook_client
from hub_webhooks.services import Policy, webhook_create, webhooks_deliver

# Retries within milliseconds, so a test's outage costs what the receiver's own pauses cost.
FAST = Policy(lease_seconds=30, timeout_seconds=2, backoff_base_seconds=0.005, backoff_cap_seconds=0.02, batch=200)


@pytest.fixture
def subscribe(owner, network, receiver, allow_private) -> Callable[..., Subscription]:
    """subscribe(**filters) → a subscription of `network` to the receiver, whose secret it learns."""

    def make(**filters) -> Subscription:
        subscription, secret = webhook_create(
            actor=owner, network_id=network.id, url=receiver.url, **{"event_types": [], **filters}
        )
        receiver.secret = secret
        return subscription

    return make


@pytest.fixture
def emit(network) -> Callable[..., list[int]]:
    """emit(n, alias="coder") → publish n task_updated events (in sealed writes of 100), returning
    the operators' feed positions they took."""
    from hub_events.models import OPERATORS, Event

    def publish_many(count: int, alias: str = "coder", type: EventType = EventType.TASK_UPDATED) -> list[int]:
        before = Event.objects.filter(network_id=network.id).order_by("-seq").values_list("seq", flat=True).first() or 0
        for start in range(0, count, 100):
            with sealed_atomic():
                for n in range(start, min(count, start + 100)):
                    publish(
                        HubEvent(
                            type=type,
                            network_id=network.id,
                            audience=(alias,),
                            payload={key: f"{key}-{n}" for key in EVENT_SCHEMA[type]},
                        )
                    )
        return list(
            Event.objects.filter(network_id=network.id, audience=OPERATORS, seq__gt=before)
            .order_by("seq")
            .values_list("seq", flat=True)
        )

    return publish_many


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with webhook_client() as client:
        yield client


def deliver_until(
    done: Callable[[], bool],
    *,
    client: httpx.Client,
    owner: str = "test-deliverer",
    passes: int = 5000,
    policy: Policy = FAST,
) -> None:
    """Run delivery passes until `done()` (or fail after `passes`)."""
    for _ in range(passes):
        webhooks_deliver(owner=owner, client=client, policy=policy)
        if done():
            return
    raise AssertionError("delivery did not finish")


@pytest.fixture
def deliver(http) -> Callable[..., None]:
    def run(done: Callable[[], bool], **kwargs) -> None:
        deliver_until(done, client=http, **kwargs)

    return run
