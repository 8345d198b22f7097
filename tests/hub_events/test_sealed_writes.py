"""One commit per write: a service seals its events (gives them their feed positions) as the last
statements of its own transaction, from a per-network counter whose row lock is held to commit, so
positions still become visible in order. What a write publishes outside such a block is sealed after
commit, and a doorbell rung from a pool thread is handed to the worker's event loop."""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import async_to_sync
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from hub_core import doorbell
from hub_core.doorbell import feed_group
from hub_core.events import EventType, HubEvent, publish, sealed_atomic
from hub_core.waiting import in_pool
from hub_events.models import OPERATORS, Event
from hub_events.selectors import events_after
from tests.helpers.calls import send_task


def operators_feed(network) -> list[tuple[int, str]]:
    frames = events_after(network_id=network.id, audience=OPERATORS, after=0)
    return [(frame["id"], frame["payload"]["content"]) for frame in frames]


def message(network, content: str) -> HubEvent:
    keys = {"message_id": "m", "type": "message", "priority": "normal", "from_session": "hub", "task_id": None}
    keys.update(context=None, budget_usd=None, budget_tokens=None)
    return HubEvent(EventType.NEW_MESSAGE, network.id, ("coder",), {**keys, "content": content})


@pytest.mark.django_db(transaction=True)
def test_a_send_commits_once_with_its_events_already_sealed(agent, network):
    send_task(actor=agent, alias="coder", task="warm up")  # the network's counter row exists
    with CaptureQueriesContext(connection) as queries:
        send_task(actor=agent, alias="coder", task="build")

    statements = [q["sql"] for q in queries.captured_queries]
    assert [s for s in statements if s.startswith("COMMIT")] == ["COMMIT"] or connection.vendor != "postgresql"
    assert not any("SAVEPOINT" in s for s in statements)  # no client_request_id: no twin to race
    assert not Event.objects.filter(seq__isnull=True).exists()
    assert [content for _, content in operators_feed(network)] == ["warm up", "build"]


def test_rows_are_sealed_before_the_commit_and_only_rings_wait_for_it(
    agent, network, django_capture_on_commit_callbacks, monkeypatch
):
    rung: list[list[str]] = []
    monkeypatch.setattr("hub_core.events.ring", lambda groups: rung.append(list(groups)))
    with django_capture_on_commit_callbacks(execute=True):
        with sealed_atomic():
            send_task(actor=agent, alias="a", task="1")
            send_task(actor=agent, alias="b", task="2")
            assert not Event.objects.exists()  # the outermost block's seal writes them
        assert Event.objects.filter(seq__isnull=False).count() == 4  # sealed, still uncommitted
        assert rung == []

    assert rung == [[feed_group(network.id, who) for who in (OPERATORS, "a", "b")]]  # once, after commit


def test_what_is_published_outside_a_sealed_block_is_sealed_after_commit(network, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks, transaction.atomic():
        publish(message(network, "from the admin"))
    assert Event.objects.filter(seq__isnull=True).count() == 2

    for callback in callbacks:
        callback()
    assert operators_feed(network)[0][1] == "from the admin"


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_savepoint_leaves_no_sealed_rows_and_no_gap(agent, network):
    with sealed_atomic():
        publish(message(network, "kept 1"))  # the transaction's outbox starts out here
        with pytest.raises(RuntimeError), transaction.atomic():
            publish(message(network, "taken back"))
            raise RuntimeError("not this one")
        publish(message(network, "kept 2"))
    with transaction.atomic():  # a caller's own transaction around a service
        with pytest.raises(RuntimeError), transaction.atomic():
            send_task(actor=agent, alias="coder", task="sealed, then taken back")
            raise RuntimeError("nor this one")
        send_task(actor=agent, alias="coder", task="kept 3")
        assert not Event.objects.filter(seq__isnull=True).exists()  # sealed before the real commit

    feed = operators_feed(network)
    assert [content for _, content in feed] == ["kept 1", "kept 2", "kept 3"]
    first = feed[0][0]
    assert [seq for seq, _ in feed] == [first, first + 2, first + 4]  # each event: an alias's copy too
    assert sorted(Event.objects.values_list("seq", flat=True)) == list(range(first, first + 6))


@pytest.mark.django_db(transaction=True)
def test_a_second_writer_takes_its_positions_only_after_the_first_commits(agent, network):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite lets one transaction write at a time")
    send_task(actor=agent, alias="coder", task="warm up")
    sealed = threading.Event()
    second: dict[str, object] = {}

    def second_writer() -> None:
        try:
            sealed.wait(timeout=30)
            connection.ensure_connection()
            second["pid"] = connection.connection.info.backend_pid
            second["result"] = send_task(actor=agent, alias="coder", task="second")
        finally:
            connection.close()

    thread = threading.Thread(target=second_writer)
    with transaction.atomic():
        send_task(actor=agent, alias="coder", task="first")  # sealed: its counter row lock is held
        thread.start()
        sealed.set()
        waiting = False
        for _ in range(3000):  # until the second writer waits on our lock (or 30 s)
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_stat_clear_snapshot()")  # a transaction sees one snapshot
                cursor.execute(  # waiting for the counter row's lock, in its seal
                    "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s AND query LIKE %s",
                    [second.get("pid", -1), "%hub_events_eventcounter%"],
                )
                row = cursor.fetchone()
            if row is not None and row[0] == "Lock":
                waiting = True
                break
            threading.Event().wait(0.01)
    thread.join(timeout=30)

    assert waiting, "the second writer took positions while the first still held the counter"
    assert [content for _, content in operators_feed(network)] == ["warm up", "first", "second"]


@pytest.mark.django_db(transaction=True)
def test_a_write_on_the_pool_hands_its_ring_to_the_event_loop(agent, network, monkeypatch):
    def blocking_ring(*args, **kwargs):
        raise AssertionError("a write on the pool must not wait for its ring")

    monkeypatch.setattr(doorbell, "async_to_sync", blocking_ring)

    async def send() -> list[str]:
        rung: list[str] = []
        done = asyncio.Event()

        async def ring_on_this_loop(groups: list[str]) -> None:
            rung.extend(groups)
            done.set()

        monkeypatch.setattr(doorbell, "_ring", ring_on_this_loop)
        await in_pool(lambda: send_task(actor=agent, alias="coder", task="ring"))
        await asyncio.wait_for(done.wait(), timeout=10)
        return rung

    assert async_to_sync(send)() == [feed_group(network.id, OPERATORS), feed_group(network.id, "coder")]
