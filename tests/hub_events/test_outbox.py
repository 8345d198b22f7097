"""The publisher's outbox: one delivery per transaction, nothing for what rolled back, and a
savepoint rolled back after the first publish does not lose the delivery of the rest."""

from __future__ import annotations

import pytest
from django.db import transaction

from hub_core.doorbell import feed_group
from hub_events.models import OPERATORS, Event
from tests.helpers.calls import send_task


def unsealed() -> int:
    return Event.objects.filter(seq__isnull=True).count()


@pytest.mark.django_db(transaction=True)
def test_a_publish_after_a_rolled_back_savepoint_is_still_delivered_at_commit(agent):
    with transaction.atomic():
        with pytest.raises(RuntimeError), transaction.atomic():
            send_task(actor=agent, alias="coder", task="taken back")  # the transaction's first publish
            raise RuntimeError("not this one")
        send_task(actor=agent, alias="coder", task="kept")

    (kept,) = Event.objects.filter(audience="coder")
    assert kept.payload["content"] == "kept"
    assert kept.seq is not None  # sealed at commit, by the outbox the first publish had to give up


def test_many_publishes_in_nested_blocks_are_delivered_together_once(
    agent, network, django_capture_on_commit_callbacks, monkeypatch
):
    rung: list[list[str]] = []
    monkeypatch.setattr("hub_core.events.ring", lambda groups: rung.append(list(groups)))
    with django_capture_on_commit_callbacks(execute=False) as callbacks, transaction.atomic():
        send_task(actor=agent, alias="a", task="1")
        with transaction.atomic():
            send_task(actor=agent, alias="b", task="2")
        send_task(actor=agent, alias="c", task="3")

    assert unsealed() == 0  # each send sealed its event, before the commit
    for callback in callbacks:
        callback()
    assert rung == [[feed_group(network.id, who) for who in (OPERATORS, "a", "b", "c")]]  # one ring, at commit


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_transaction_leaves_nothing_for_the_next_one_to_deliver(agent):
    with pytest.raises(RuntimeError), transaction.atomic():
        send_task(actor=agent, alias="coder", task="never")
        raise RuntimeError("rolled back")
    send_task(actor=agent, alias="coder", task="sent")  # its own transaction: delivered at its commit

    assert {event.payload["content"] for event in Event.objects.all()} == {"sent"}
    assert unsealed() == 0
