"""The delivery engine against a real receiver on 127.0.0.1: every event arrives signed, in feed
order, at least once, and again only where the receiver did not answer 2xx."""

from __future__ import annotations

import time

import pytest

from hub_core.events import EventType
from hub_events.models import OPERATORS, Event
from hub_webhooks.models import Delivery, Subscription
from hub_webhooks.services import webhooks_deliver
from tests.helpers.metrics import parse, value
from tests.helpers.webhooks import assert_in_order_at_least_once
from tests.hub_webhooks.conftest import FAST

pytestmark = pytest.mark.django_db


@pytest.mark.slow  # ten seconds: a thousand real POSTs, each settled in its own transaction
def test_a_thousand_events_arrive_signed_in_order_exactly_once(subscribe, emit, receiver, deliver):
    subscription = subscribe()
    seqs = emit(1000)

    deliver(lambda: len(receiver.received) >= 1000)

    received = receiver.snapshot()
    assert [got.seq for got in received] == seqs  # exactly once each, in feed order
    assert all(got.signed for got in received)
    assert {got.status for got in received} == {200}
    first = received[0]
    assert first.event_id == f"{subscription.network_id}:{seqs[0]}"
    assert first.event_type == "task_updated"
    assert first.headers["user-agent"] == "CommHub-Webhooks/1"
    assert first.headers["content-type"] == "application/json"
    assert (
        first.frame == Event.objects.get(network_id=subscription.network_id, audience=OPERATORS, seq=seqs[0]).as_frame()
    )
    subscription.refresh_from_db()
    assert subscription.cursor == seqs[-1]
    assert subscription.failing_since is None
    assert Delivery.objects.filter(subscription=subscription, outcome=Delivery.Outcome.DELIVERED).count() == 1000


def test_an_outage_loses_nothing_and_repeats_only_what_was_not_accepted(subscribe, emit, receiver, deliver, http):
    subscription = subscribe()
    seqs = emit(300)
    refusals: dict[int, int] = {}

    def flaky(got) -> int:
        # Events 50-59 are each refused three times with a 500 before the receiver takes them.
        if seqs[50] <= got.seq <= seqs[59] and refusals.get(got.seq, 0) < 3:
            refusals[got.seq] = refusals.get(got.seq, 0) + 1
            return 500
        return 200

    receiver.answer_with = flaky
    deliver(lambda: len(receiver.accepted()) >= 120)

    receiver.stop()  # now the port is closed: no answer at all
    cursor = Subscription.objects.get(pk=subscription.pk).cursor
    for _ in range(20):
        webhooks_deliver(owner="test-deliverer", client=http, policy=FAST)
        time.sleep(0.01)
    stuck = Subscription.objects.get(pk=subscription.pk)
    assert stuck.cursor == cursor, "the cursor moved without a 2xx"
    assert stuck.failing_since is not None and stuck.attempts >= 5
    errors = Delivery.objects.filter(subscription=subscription, outcome=Delivery.Outcome.FAILED, status_code=None)
    assert errors.count() == stuck.attempts
    assert "ConnectError" in errors.first().error

    receiver.start()
    deliver(lambda: len(receiver.accepted()) >= 300)

    received = receiver.snapshot()
    assert_in_order_at_least_once(received, seqs)
    assert receiver.accepted() == seqs  # each accepted exactly once
    assert sum(got.status == 500 for got in received) == 30  # the only repeats: the refused ones
    assert len(received) == 330
    recovered = Subscription.objects.get(pk=subscription.pk)
    assert recovered.cursor == seqs[-1] and recovered.failing_since is None and recovered.attempts == 0
    failed = Delivery.objects.filter(subscription=subscription, status_code=500)
    assert failed.count() == 30
    assert set(failed.values_list("attempt", flat=True)) == {1, 2, 3}
    assert failed.first().response_excerpt == "receiver says no"


def test_only_the_chosen_types_and_alias_are_sent(subscribe, emit, receiver, deliver, network):
    subscription = subscribe(event_types=["task_updated"], alias="coder")
    emit(5, alias="other")
    wanted = emit(3, alias="coder")
    emit(4, alias="coder", type=EventType.SESSION_UPDATED)
    last = emit(2, alias="other")

    deliver(lambda: Subscription.objects.get(pk=subscription.pk).cursor == last[-1])

    assert [got.seq for got in receiver.snapshot()] == wanted
    assert all(got.frame["to"] == ["coder"] for got in receiver.snapshot())


def test_a_new_subscription_starts_at_the_end_of_the_feed(emit, subscribe, receiver, deliver):
    emit(5)  # before the subscription: history is not replayed
    subscription = subscribe()
    later = emit(2)

    deliver(lambda: Subscription.objects.get(pk=subscription.pk).cursor == later[-1])

    assert [got.seq for got in receiver.snapshot()] == later


def test_events_the_log_pruned_are_noted_and_the_rest_still_sent(subscribe, emit, receiver, deliver, settings, network):
    subscription = subscribe()
    old = emit(4)
    new = emit(3)
    # The subscription fell far behind (disabled for weeks, say) and the log pruned its oldest events.
    week_ago = Event.objects.filter(seq__in=new).values_list("created_at", flat=True)[0].replace(year=2000)
    Subscription.objects.filter(pk=subscription.pk).update(cursor_at=week_ago)
    Event.objects.filter(network_id=network.id, seq__lte=old[-1] + 1).delete()  # every copy of the old events

    deliver(lambda: Subscription.objects.get(pk=subscription.pk).cursor == new[-1])

    assert [got.seq for got in receiver.snapshot()] == new
    note = Delivery.objects.get(subscription=subscription, outcome=Delivery.Outcome.SKIPPED)
    assert "pruned" in note.error and f"Positions {old[0]} to " in note.error


def test_deliveries_are_counted_by_outcome(
    subscribe, emit, receiver, http, network, django_capture_on_commit_callbacks
):
    from prometheus_client import REGISTRY

    def count(outcome: str) -> float:
        labels = {"network": network.id, "outcome": outcome}
        return REGISTRY.get_sample_value("commhub_webhook_deliveries_total", labels) or 0.0

    subscribe()
    emit(2)
    before = count("delivered"), count("failed")
    receiver.answer_with = lambda got: 200 if len(receiver.received) == 0 else 500
    with django_capture_on_commit_callbacks(execute=True):
        webhooks_deliver(owner="test-deliverer", client=http, policy=FAST)
    assert (count("delivered") - before[0], count("failed") - before[1]) == (1, 1)


def test_a_webhooks_lag_is_on_metrics_until_it_has_delivered(client, subscribe, emit, receiver, deliver, network):
    """/metrics' event-log lag: positions between the network's newest and a webhook's cursor."""
    subscription = subscribe()
    seqs = emit(5)
    feed = {"network": network.id, "feed": f"webhook:{subscription.pk}"}

    behind = value(parse(client.get("/metrics").content.decode()), "commhub_event_log_lag", **feed)
    assert behind == seqs[-1] - subscription.cursor >= len(seqs)  # positions of the operators' feed

    deliver(lambda: len(receiver.accepted()) >= len(seqs))
    assert value(parse(client.get("/metrics").content.decode()), "commhub_event_log_lag", **feed) == 0
