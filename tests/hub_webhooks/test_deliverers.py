"""Deliverers as they run for real: several at once (each event still sent once), and one killed
with SIGKILL in the middle of a POST (the next one resumes from the cursor: nothing lost)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from django.db import connection

from hub_webhooks.models import Subscription
from hub_webhooks.send import webhook_client
from hub_webhooks.services import webhooks_deliver
from tests.helpers import ROOT
from tests.helpers.live import database_url
from tests.helpers.webhooks import assert_in_order_at_least_once
from tests.hub_webhooks.conftest import FAST

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.race
def test_racing_deliverers_send_each_event_once_in_order(subscribe, emit, receiver):
    subscribe()
    seqs = emit(150)
    receiver.delay = 0.002  # a POST takes a moment, so the deliverers overlap

    def deliverer(name: str) -> None:
        try:
            with webhook_client() as client:
                deadline = time.monotonic() + 60
                while len(receiver.accepted()) < len(seqs) and time.monotonic() < deadline:
                    webhooks_deliver(owner=name, client=client, policy=FAST)
        finally:
            connection.close()

    threads = [threading.Thread(target=deliverer, args=(f"deliverer-{n}",)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)

    assert [got.seq for got in receiver.snapshot()] == seqs  # each once, in order
    assert all(got.signed for got in receiver.snapshot())


def _deliverer(*extra: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DATABASE_URL": database_url(), "CONN_MAX_AGE": "0", "COMMHUB_WEBHOOKS_ALLOW_PRIVATE": "true"}
    argv = [sys.executable, "manage.py", "webhooks", "--timeout", "2", "--lease-seconds", "8", "--interval", "0.1"]
    return subprocess.Popen([*argv, *extra], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.mark.slow
def test_a_deliverer_killed_mid_post_loses_nothing(subscribe, emit, receiver):
    subscription = subscribe()
    seqs = emit(200)
    first = _deliverer()
    killed = threading.Event()

    def kill_during_the_80th(got) -> int:
        # SIGKILL while the deliverer waits for this answer: the receiver takes the event, the
        # deliverer never learns it did.
        if len(receiver.received) == 79 and not killed.is_set():
            os.kill(first.pid, signal.SIGKILL)
            first.wait(timeout=10)
            killed.set()
        return 200

    receiver.answer_with = kill_during_the_80th
    assert killed.wait(timeout=60), first.stderr.read().decode() if first.poll() is not None else "too slow"
    stopped_at = len(receiver.received)
    time.sleep(0.5)
    assert len(receiver.received) == stopped_at  # nothing sends while the dead deliverer holds the lease

    second = _deliverer()
    try:
        deadline = time.monotonic() + 60
        # Until every event is accepted and recorded: the cursor moves after each answer, so
        # stopping the deliverer at the last answer could cut off its last write.
        while time.monotonic() < deadline and not (
            len(set(receiver.accepted())) == len(seqs)
            and Subscription.objects.get(pk=subscription.pk).cursor == seqs[-1]
        ):
            assert second.poll() is None, second.stderr.read().decode()
            time.sleep(0.1)
    finally:
        second.terminate()
        second.wait(timeout=10)

    received = receiver.snapshot()
    # Every event arrived, in order; the only repeat is the one in flight at the kill.
    assert_in_order_at_least_once(received, seqs, redelivered_ok=1)
    assert len(received) == len(seqs) + 1
    assert received[79].seq == received[80].seq == seqs[79]
    assert Subscription.objects.get(pk=subscription.pk).cursor == seqs[-1]
