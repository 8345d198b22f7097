"""A hub process killed with SIGKILL under a steady send/ack/complete load loses nothing it confirmed.

Every call answered `ok: true` before the kill is in the database afterwards, every task is in a
legal state with a history that leads to it, nothing is half-written, and a restarted hub seals
the events the dead one committed but never sealed.
"""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from hub_events.models import Event
from hub_tasks.models import TERMINAL, Completion, InboxMessage, Task, TaskEvent, TaskStatus

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ALIASES = ["crash-a", "crash-b", "crash-c"]
LOAD_SECONDS = 4


@dataclass
class Confirmed:
    """What the hub answered ok to, before it died."""

    sent: set[str] = field(default_factory=set)
    acked: set[str] = field(default_factory=set)
    completed: dict[str, str] = field(default_factory=dict)  # completion id -> task id
    lock: threading.Lock = field(default_factory=threading.Lock)


def mcp_call(client: httpx.Client, url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = client.post(
        f"{url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
        headers={"MCP-Protocol-Version": "2025-06-18", "Accept": "application/json, text/event-stream"},
    )
    reply.raise_for_status()
    return reply.json()["result"]["structuredContent"]


def sender(url: str, headers: dict[str, str], confirmed: Confirmed, stop: threading.Event, who: int) -> None:
    with httpx.Client(headers=headers, timeout=10) as client:
        for n in itertools.count():
            if stop.is_set():
                return
            try:
                reply = client.post(
                    f"{url}/api/v1/tasks", json={"alias": ALIASES[n % len(ALIASES)], "task": f"job {who}-{n}"}
                )
            except httpx.TransportError:
                return  # the hub died: this call's outcome is unknown, so it is not counted
            if reply.status_code == 201:
                with confirmed.lock:
                    confirmed.sent.add(reply.json()["task_id"])


def worker(url: str, headers: dict[str, str], alias: str, confirmed: Confirmed, stop: threading.Event) -> None:
    with httpx.Client(headers=headers, timeout=10) as client:
        while not stop.is_set():
            try:
                inbox = client.get(f"{url}/api/v1/sessions/{alias}/inbox", params={"limit": 5}).json()
                for message in inbox.get("messages", []):
                    acked = client.post(f"{url}/api/v1/sessions/{alias}/inbox/{message['id']}/ack", json={})
                    if acked.status_code == 200 and acked.json()["ok"]:
                        with confirmed.lock:
                            confirmed.acked.add(message["id"])
                    if not message.get("task_id"):
                        continue
                    done = mcp_call(
                        client, url, "report_completion", {"alias": alias, "task": message["task_id"], "result": "ok"}
                    )
                    if done.get("ok") and done.get("task_id"):
                        with confirmed.lock:
                            confirmed.completed[done["completion_id"]] = done["task_id"]
            except (httpx.TransportError, httpx.HTTPStatusError):
                return


def test_a_killed_hub_loses_nothing_it_confirmed(hub_server, agent_http, network):
    hub = hub_server(env={"COMMHUB_WRITE_RATE_LIMIT": "off"})
    confirmed, stop = Confirmed(), threading.Event()
    threads = [
        threading.Thread(target=sender, args=(hub.url, agent_http.headers, confirmed, stop, who)) for who in range(2)
    ] + [threading.Thread(target=worker, args=(hub.url, agent_http.headers, a, confirmed, stop)) for a in ALIASES]
    for thread in threads:
        thread.start()

    time.sleep(LOAD_SECONDS)
    os.kill(hub.process.pid, signal.SIGKILL)  # mid-flight: some calls are half way through
    hub.process.wait(timeout=10)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)

    assert len(confirmed.sent) > 20, "the load never got going"
    assert confirmed.completed, "no completion was confirmed before the kill"

    # Everything confirmed is there.
    assert set(Task.objects.filter(pk__in=confirmed.sent).values_list("pk", flat=True)) == confirmed.sent
    assert InboxMessage.objects.filter(pk__in=confirmed.acked, acked_at__isnull=True).count() == 0
    assert InboxMessage.objects.filter(pk__in=confirmed.acked).count() == len(confirmed.acked)
    completions = dict(Completion.objects.filter(pk__in=confirmed.completed).values_list("pk", "task_id"))
    assert completions == confirmed.completed
    assert set(Task.objects.filter(pk__in=completions.values()).values_list("status", flat=True)) == {
        TaskStatus.REPLIED
    }

    # Nothing is half-written: each task's history leads to its status, inbox rows match tasks.
    for task in Task.objects.all():
        steps = list(task.events.order_by("id").values_list("from_status", "to_status"))
        assert steps, f"task {task.pk} has no history"
        assert steps[-1][1] == task.status, f"task {task.pk}: history ends at {steps[-1][1]}, row says {task.status}"
        for (_, reached), (left, _) in itertools.pairwise(steps):
            assert left == reached, f"task {task.pk}: history jumps {steps}"
        pending = InboxMessage.objects.filter(task=task, acked_at__isnull=True).count()
        if task.status in TERMINAL:
            assert pending == 0, f"finished task {task.pk} still waits in an inbox"
    assert not InboxMessage.objects.filter(type=InboxMessage.Type.TASK, task__isnull=True).exists()
    assert not TaskEvent.objects.filter(task__isnull=True).exists()
    assert Completion.objects.filter(task__isnull=False).exclude(task__status=TaskStatus.REPLIED).count() == 0

    # A restarted hub serves on, and seals what the dead one left unsealed.
    again = hub_server(env={"COMMHUB_WRITE_RATE_LIMIT": "off"})
    assert agent_http.send_task(again, ALIASES[0], "after the crash")["ok"] is True
    assert agent_http.inbox(again, ALIASES[0])["ok"] is True
    assert not Event.objects.filter(seq__isnull=True).exists()
    seqs = list(Event.objects.filter(network_id=network.id).values_list("seq", flat=True))
    assert len(seqs) == len(set(seqs)), "two events share a feed position"
