"""Delivery receipts against a live hub: an SSE reader and a long-poll reader each leave the receipt of
the message they got, and the task's first_read_at (plain get_inbox: tests/hub_tasks/test_receipts.py)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from hub_events.selectors import events_position
from tests.helpers.live import rest, sse_events

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_task_pushed_over_sse_is_delivered_and_first_read(hub_server, agent_http, network):
    hub = hub_server()
    sent: dict[str, Any] = {}
    stream = sse_events(hub, agent_http, "coder", last_event_id=events_position(network_id=network.id))
    sender = threading.Thread(target=lambda: sent.update(agent_http.send_task(hub, "coder", "ping")), daemon=True)
    sender.start()
    frame = next(frame for _, kind, frame in stream if kind == "new_task")
    stream.close()
    sender.join(timeout=30)

    # The receipt is written before the frame leaves the hub: no waiting needed here.
    task = rest(hub, agent_http, "GET", f"/tasks/{sent['task_id']}")["task"]
    (row,) = rest(hub, agent_http, "GET", "/sessions/coder/inbox")["messages"]
    assert frame["payload"]["message_id"] == row["id"]
    assert task["first_read_at"] is not None
    assert (row["delivered_via"], row["delivered_at"]) == ("sse", task["first_read_at"])


@pytest.mark.parametrize("transport", ["rest", "mcp"])
def test_a_long_poll_reader_gets_the_receipt_of_what_woke_it(hub_server, agent_http, transport):
    hub = hub_server()
    wait = agent_http.inbox if transport == "rest" else agent_http.mcp_inbox
    answered: dict[str, Any] = {}
    waiter = threading.Thread(target=lambda: answered.update(wait(hub, "coder", wait_seconds=30)))
    waiter.start()
    time.sleep(1.0)  # the waiter is waiting by now (found nothing on its first read)
    assert not answered
    sent = agent_http.send_task(hub, "coder", "wake up")
    waiter.join(timeout=30)

    (row,) = answered["messages"]
    task = rest(hub, agent_http, "GET", f"/tasks/{sent['task_id']}")["task"]
    assert row["id"] == sent["task_id"]
    assert (row["delivered_via"], row["delivered_at"]) == ("get_inbox", task["first_read_at"])
    assert row["delivered_at"] is not None
