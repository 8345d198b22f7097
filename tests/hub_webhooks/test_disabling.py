"""A subscription failing without a break for a day is disabled, with a notice to the owners (an
audit row, an event on the operators' feed, a note among its deliveries); enabling it resumes
from its cursor."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest

from hub_agents.models import AuditEntry
from hub_events.models import OPERATORS, Event
from hub_webhooks.models import Delivery, Subscription
from hub_webhooks.services import Policy, webhook_create, webhook_set_active, webhooks_deliver

pytestmark = pytest.mark.django_db

# Production's backoff and give-up time, with a short POST timeout (the port is closed anyway).
DAY = Policy(timeout_seconds=2)


def test_a_day_of_failures_disables_the_subscription(owner, network, emit, clock, http, allow_private, receiver):
    receiver.stop()  # a closed port: every attempt fails
    subscription, _ = webhook_create(actor=owner, network_id=network.id, url=receiver.url, event_types=[])
    (seq,) = emit(1)

    webhooks_deliver(owner="d", client=http, policy=DAY)
    failing = Subscription.objects.get(pk=subscription.pk)
    assert failing.attempts == 1 and failing.failing_since is not None
    first_wait = failing.next_attempt_at - failing.failing_since
    assert timedelta(seconds=2.5) <= first_wait <= timedelta(seconds=5)  # base 5 s, half of it jitter

    webhooks_deliver(owner="d", client=http, policy=DAY)  # not due yet: no attempt
    assert Delivery.objects.filter(subscription=subscription).count() == 1

    waits = []
    while Subscription.objects.get(pk=subscription.pk).state == Subscription.State.ACTIVE:
        due = Subscription.objects.get(pk=subscription.pk).next_attempt_at
        clock.move_to(due)
        webhooks_deliver(owner="d", client=http, policy=DAY)
        waits.append(due)
        assert len(waits) < 100, "never disabled"

    disabled = Subscription.objects.get(pk=subscription.pk)
    assert disabled.cursor == subscription.cursor  # the event was never delivered
    assert "disabled after one day of retries" in disabled.disabled_reason
    gaps = [later - earlier for earlier, later in itertools.pairwise(waits)]
    assert max(gaps) <= timedelta(hours=1)  # capped
    assert gaps[0] < gaps[4] < gaps[8]  # and growing
    assert waits[-1] - failing.failing_since >= timedelta(days=1)
    assert waits[-2] - failing.failing_since < timedelta(days=1)

    audit = AuditEntry.objects.get(action=AuditEntry.Action.WEBHOOK_DISABLED)
    assert audit.network_id == network.id and audit.actor == "system" and receiver.url in audit.target
    notice = Event.objects.get(network_id=network.id, audience=OPERATORS, type="webhook_disabled")
    assert notice.payload["subscription_id"] == subscription.pk and notice.payload["url"] == receiver.url
    assert notice.seq is not None  # sealed: on the operators' feed
    note = Delivery.objects.get(subscription=subscription, outcome=Delivery.Outcome.DISABLED)
    assert note.error == disabled.disabled_reason

    # Nothing more is attempted while it is disabled.
    attempts = Delivery.objects.count()
    clock.tick(7200)
    webhooks_deliver(owner="d", client=http, policy=DAY)
    assert Delivery.objects.count() == attempts

    # Enabled again (the receiver is back): it resumes from its cursor, with the event it failed on
    # (and then the notice of its own disabling, which came after it on the feed).
    receiver.start()
    webhook_set_active(actor=owner, subscription_id=subscription.pk, active=True)
    webhooks_deliver(owner="d", client=http, policy=DAY)
    assert [got.seq for got in receiver.snapshot()] == [seq, notice.seq]
    assert AuditEntry.objects.filter(action=AuditEntry.Action.WEBHOOK_CHANGED, detail__change="enabled").exists()


def test_one_success_ends_a_run_of_failures(owner, network, emit, clock, http, allow_private, receiver):
    receiver.status = 503
    subscription, secret = webhook_create(actor=owner, network_id=network.id, url=receiver.url, event_types=[])
    receiver.secret = secret
    emit(1)
    webhooks_deliver(owner="d", client=http, policy=DAY)
    clock.tick(23 * 3600)
    receiver.status = 200
    webhooks_deliver(owner="d", client=http, policy=DAY)
    recovered = Subscription.objects.get(pk=subscription.pk)
    assert recovered.state == Subscription.State.ACTIVE and recovered.failing_since is None
    # A failure now starts a new day, not the end of the old one.
    receiver.status = 500
    emit(1)
    clock.tick(2 * 3600)
    webhooks_deliver(owner="d", client=http, policy=DAY)
    assert Subscription.objects.get(pk=subscription.pk).state == Subscription.State.ACTIVE
