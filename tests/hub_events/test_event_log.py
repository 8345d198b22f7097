"""The event log: written with the change, sealed in commit order, pruned when old."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.db import transaction
from django.utils import timezone

from hub_core.doorbell import Doorbell, feed_group
from hub_events.models import OPERATORS, Event
from hub_events.selectors import events_after, events_position
from hub_events.services import events_prune, events_seal_leftovers
from tests.helpers.calls import broadcast, send_task


def test_an_event_is_written_and_sealed_with_its_change(agent, network, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        sent = send_task(actor=agent, alias="coder", task="build")
        rows = list(Event.objects.filter(type="new_task").order_by("id"))
        assert [row.audience for row in rows] == [OPERATORS, "coder"]
        assert rows[0].seq is not None and rows[1].seq == rows[0].seq + 1  # in the write's transaction

    frames = events_after(network_id=network.id, audience="coder", after=0)
    assert [(frame["type"], frame["payload"]["task_id"], frame["to"]) for frame in frames] == [
        ("new_task", sent["task_id"], ["coder"])
    ]
    assert events_after(network_id=network.id, audience=OPERATORS, after=0)[0]["id"] < frames[0]["id"]


def test_a_rolled_back_change_records_and_pushes_nothing(agent, network, published, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with pytest.raises(RuntimeError), transaction.atomic():
            send_task(actor=agent, alias="coder", task="never")
            raise RuntimeError("changed my mind")

    assert callbacks == []
    assert published == []
    assert not Event.objects.exists()


def test_feed_positions_only_grow_and_page_in_order(agent, network, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        for n in range(5):
            send_task(actor=agent, alias="coder", task=f"task {n}")

    frames = events_after(network_id=network.id, audience="coder", after=0)
    ids = [frame["id"] for frame in frames]
    assert ids == sorted(ids) and len(set(ids)) == 5
    assert [frame["payload"]["content"] for frame in frames] == [f"task {n}" for n in range(5)]
    assert events_after(network_id=network.id, audience="coder", after=ids[1], limit=2) == frames[2:4]
    assert events_position(network_id=network.id) >= ids[-1]


def test_a_broadcast_is_sealed_once_for_all_its_events(agent, network, online, django_capture_on_commit_callbacks):
    for alias in ("a", "b", "c"):
        online(alias)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        broadcast(actor=agent, message="deploy at 5")

    assert len(callbacks) == 1  # one outbox for the transaction, not one per recipient
    callbacks[0]()
    assert not Event.objects.filter(seq__isnull=True).exists()
    for alias in ("a", "b", "c"):
        assert [f["type"] for f in events_after(network_id=network.id, audience=alias, after=0)] == ["broadcast"]


def test_events_left_unsealed_by_a_dead_process_are_sealed_by_the_next_seal(agent, network):
    with transaction.atomic():  # committed, but its process "died" before its after-commit seal
        Event.objects.create(network=network, audience="coder", to=["coder"], type="new_task", payload={})

    assert events_after(network_id=network.id, audience="coder", after=0) == []
    assert events_seal_leftovers(network_id=network.id) == 1
    assert len(events_after(network_id=network.id, audience="coder", after=0)) == 1


def test_old_events_are_pruned_after_the_retention(network, settings):
    settings.COMMHUB_EVENT_RETENTION_SECONDS = 3600
    Event.objects.create(network=network, audience="", type="x", payload={}, seq=1)
    Event.objects.create(network=network, audience="", type="y", payload={}, seq=2)
    Event.objects.filter(seq=1).update(created_at=timezone.now() - timedelta(hours=2))

    assert events_prune(network_id=network.id) == 1
    assert list(Event.objects.values_list("type", flat=True)) == ["y"]


@pytest.mark.django_db(transaction=True)
def test_the_doorbell_rings_for_the_audience_only_after_commit(agent, network):
    async def listen() -> tuple[bool, bool]:
        async with Doorbell([feed_group(network.id, "coder")]) as bell:

            def send_and_peek() -> bool:
                with transaction.atomic():
                    send_task(actor=agent, alias="coder", task="ring")
                    return async_to_sync(bell.wait)(0.3)  # inside the transaction: must stay silent

            rang_before = await sync_to_async(send_and_peek)()
            return rang_before, await bell.wait(2)

    rang_before, rang = async_to_sync(listen)()
    assert rang_before is False
    assert rang is True


def test_a_large_broadcast_is_sealed_whole_after_commit(agent, network, django_capture_on_commit_callbacks):
    from hub_agents.models import AgentSession

    AgentSession.objects.bulk_create(
        AgentSession(network=network, resume_id=f"r{n}", alias=f"a{n:03}", status="idle") for n in range(600)
    )
    with django_capture_on_commit_callbacks(execute=True):
        sent = broadcast(actor=agent, message="all hands")

    assert sent["recipients"] == 600
    assert not Event.objects.filter(seq__isnull=True).exists()  # 1200 rows: more than one seal batch
    assert [f["type"] for f in events_after(network_id=network.id, audience="a599", after=0)] == ["broadcast"]


def test_an_sse_keepalive_ends_the_stream_of_a_revoked_token(network):
    from hub_agents.services import token_create, token_revoke
    from hub_live.sse import _keepalive

    token, raw = token_create(network=network, role="member")
    assert _keepalive(raw, network.id, "coder") is True
    token_revoke(token=token)
    assert _keepalive(raw, network.id, "coder") is False
