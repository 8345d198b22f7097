"""The publisher's outbox: one delivery per transaction, nothing for what rolled back, and a
savepoint rolled back after the first publish does not lose the delivery of the rest."""

from __future__ import annotations

import pytest
from django.db import transaction

from hub_events.models import Event
from hub_tasks.services import task_send


def unsealed() -> int:
    return Event.objects.filter(seq__isnull=True).count()


@pytest.mark.django_db(transaction=True)
def test_a_publish_after_a_rolled_back_savepoint_is_still_delivered_at_commit(agent):
    with transaction.atomic():
        with pytest.raises(RuntimeError), transaction.atomic():
            task_send(actor=agent, alias="coder", task="taken back")  # the transaction's first publish
            raise RuntimeError("not this one")
        task_send(actor=agent, alias="coder", task="kept")

    (kept,) = Event.objects.filter(audience="coder")
    assert kept.payload["content"] == "kept"
    assert kept.seq is not None  # sealed at commit, by the outbox the first publish had to give up


def test_many_publishes_in_nested_blocks_are_delivered_together_once(agent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks, transaction.atomic():
        task_send(actor=agent, alias="a", task="1")
        with transaction.atomic():
            task_send(actor=agent, alias="b", task="2")
        task_send(actor=agent, alias="c", task="3")

    assert len(callbacks) == 1
    assert unsealed() == 6  # three events, each an alias's copy and the operators'
    callbacks[0]()
    assert unsealed() == 0


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_transaction_leaves_nothing_for_the_next_one_to_deliver(agent):
    with pytest.raises(RuntimeError), transaction.atomic():
        task_send(actor=agent, alias="coder", task="never")
        raise RuntimeError("rolled back")
    task_send(actor=agent, alias="coder", task="sent")  # its own transaction: delivered at its commit

    assert {event.payload["content"] for event in Event.objects.all()} == {"sent"}
    assert unsealed() == 0
