"""A lapsed lease is applied once across processes (issue 16): an agent acks a task and goes silent;
once its lease has lapsed, two live hub processes (readers that settle lazily) and `manage.py sweep
--once` subprocesses race to settle it, and exactly one of them requeues or fails it, with one
notice to the sender and one change in the event log.

tests/hub_tasks/test_lease_races.py races threads of one process; here every racer is a process of
its own or a request to one, as in production with several hub workers and a sweeper beside them.
On both databases: SQLite's processes share its file (one writer at a time), PostgreSQL's its rows.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest
from django.utils import timezone

from hub_agents.services import token_create
from hub_events.models import OPERATORS, Event
from hub_events.selectors import events_position
from hub_tasks.models import InboxMessage, Task, TaskEvent
from tests.helpers import ROOT
from tests.helpers.live import Agent, Hub, assert_clean_log, database_url, rest, sse_events, wait_for
from tests.helpers.races import race

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.race]

ROUNDS = 4
LEASE_SECONDS = 1  # the least send_task accepts (hub_tools/tools.py: lease_seconds, low=1)
SENDER = "lead"
SWEEPERS = 2  # manage.py sweep --once subprocesses per round, beside the readers of both hubs
# Seconds the sweepers wait after the readers are released, round by round: a read takes some 50 ms
# to reach its hub's settling step, a warm sweeper 10 ms, so across the rounds sweepers and readers
# each get to be first (not asserted: who wins is timing; that one applies the lapse is the test).
STAGGER = (0, 0.03, 0.06, 0.1)

# `manage.py sweep --once`, run by manage.py itself, in a process that has set Django up, connected and
# run the system checks once (importing what they import) before it waits for its start line: cold,
# the command takes a second or more to start, and warm only its checks, 0.2 s, by which time the
# readers would have settled everything and the sweepers would never race them. Warmed, it sweeps
# within ~10 ms of its start line, as fast as a read reaches a hub.
SWEEPER = """
import os, runpy, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "commhub.settings")
import django
django.setup()
from django.core import checks
from django.core.management import load_command_class
from django.db import connection
connection.ensure_connection()
load_command_class("hub_tools", "sweep")
checks.run_checks()
print("ready", flush=True)
import time
time.sleep(float(sys.stdin.readline()))
sys.argv = ["manage.py", "sweep", "--once"]
runpy.run_path("manage.py", run_name="__main__")
"""


class Sweeper:
    """A `manage.py sweep --once` subprocess on the hubs' database, held at its start line."""

    def __init__(self) -> None:
        env = {**os.environ, "DATABASE_URL": database_url(), "CONN_MAX_AGE": "0"}  # as hub_server starts hubs
        self.process = subprocess.Popen(
            [sys.executable, "-c", SWEEPER],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def ready(self) -> None:
        line = self.process.stdout.readline()
        if line != b"ready\n":
            self.process.kill()
            raise AssertionError(f"the sweeper did not start: {line!r} {self.process.communicate()[1].decode()}")

    def run(self, after: float = 0) -> str:
        """Let it sweep, `after` seconds from now; what it printed ("settled N tasks" if it settled any)."""
        out, err = self.process.communicate(input=f"{after}\n".encode(), timeout=60)
        assert self.process.returncode == 0, err.decode()
        return out.decode()


@pytest.fixture
def start_sweeper() -> Iterator[Callable[[], Sweeper]]:
    """Sweepers a failing test left waiting at their start line are stopped with it."""
    started: list[Sweeper] = []

    def start() -> Sweeper:
        started.append(Sweeper())
        return started[-1]

    yield start
    for sweeper in started:
        if sweeper.process.poll() is None:
            sweeper.process.kill()
            sweeper.process.communicate()


def send(hub: Hub, dispatcher: Agent, *, alias: str, on_lost: str, over_mcp: bool) -> str:
    arguments = {"alias": alias, "task": f"index the logs for {alias}", "from_session": SENDER}
    arguments |= {"lease_seconds": LEASE_SECONDS, "on_lost": on_lost}
    if over_mcp:
        sent = dispatcher.mcp(hub, "send_task", **arguments)
    else:
        sent = rest(hub, dispatcher, "POST", "/tasks", json=arguments)
    assert sent["ok"], sent
    return sent["task_id"]


def ack(hub: Hub, worker: Agent, *, alias: str, task_id: str, from_inbox: bool) -> None:
    """The worker takes the task, from its inbox (get_inbox then ack_inbox over MCP) or by send_ack
    over REST (which leaves its inbox row for the hub to withdraw), and says nothing more."""
    if from_inbox:
        messages = worker.mcp(hub, "get_inbox", alias=alias)["messages"]
        assert [message["task_id"] for message in messages] == [task_id]
        acked = worker.mcp(hub, "ack_inbox", alias=alias, message_id=messages[0]["id"])
    else:
        acked = rest(hub, worker, "POST", f"/tasks/{task_id}/ack", json={"from_session": alias})
    assert acked["ok"], acked


def readers(hub: Hub, dispatcher: Agent, worker: Agent, *, alias: str, task_id: str, after: str) -> list[Callable]:
    """Reads that settle what fell due before answering, over REST and MCP: each must already show the
    lease's outcome, whoever applied it. The worker's own get_inbox settles its lapsed lease too (a
    call renews only leases still running), so it may race as well."""

    def get_task_rest() -> None:
        assert rest(hub, dispatcher, "GET", f"/tasks/{task_id}")["task"]["status"] == after

    def get_task_mcp() -> None:
        assert dispatcher.mcp(hub, "get_task", task_id=task_id)["task"]["status"] == after

    def list_tasks_rest() -> None:
        listed = rest(hub, dispatcher, "GET", "/tasks", params={"alias": alias})["tasks"]
        assert [(row["task_id"], row["status"]) for row in listed] == [(task_id, after)]

    def list_tasks_mcp() -> None:
        listed = dispatcher.mcp(hub, "list_tasks", alias=alias)["tasks"]
        assert [(row["task_id"], row["status"]) for row in listed] == [(task_id, after)]

    def notices(messages: list[dict[str, Any]]) -> None:
        about = [row for row in messages if row["task_id"] == task_id]
        assert [row["type"] for row in about] == [InboxMessage.Type.NOTICE], about

    def sender_inbox_rest() -> None:
        notices(rest(hub, dispatcher, "GET", f"/sessions/{SENDER}/inbox", params={"limit": 100})["messages"])

    def sender_inbox_mcp() -> None:
        notices(dispatcher.mcp(hub, "get_inbox", alias=SENDER, limit=100)["messages"])

    def worker_inbox() -> None:
        messages = worker.mcp(hub, "get_inbox", alias=alias)["messages"]
        assert [row["task_id"] for row in messages] == ([task_id] if after == "delivered" else [])

    return [
        get_task_rest,
        get_task_mcp,
        list_tasks_rest,
        list_tasks_mcp,
        sender_inbox_rest,
        sender_inbox_mcp,
        worker_inbox,
    ]


def assert_applied_once(task_id: str, *, alias: str, on_lost: str, after: str) -> None:
    """The database, read directly: one lapse applied, by the hub, with its notice and attempts."""
    task = Task.objects.get(pk=task_id)
    assert task.status == after
    from_acked = TaskEvent.objects.filter(task_id=task_id, from_status="acked").order_by("id")
    assert list(from_acked.values_list("to_status", "actor")) == [(after, "hub")]
    notices = InboxMessage.objects.filter(task_id=task_id, to_alias=SENDER, type=InboxMessage.Type.NOTICE)
    assert notices.count() == 1, list(notices.values_list("content", flat=True))
    attempts = list(task.attempts.order_by("number").values_list("outcome", flat=True))
    assert attempts == (["lost", ""] if on_lost == "requeue" else ["lost"])
    pending = InboxMessage.objects.filter(task_id=task_id, to_alias=alias, type="task", acked_at__isnull=True)
    assert pending.count() == (1 if on_lost == "requeue" else 0)

    # The event log: the change once in each feed it concerns (the worker's, the sender's, the
    # operators'), and a requeue announced to the worker as a new task once, after the first.
    changed = Event.objects.filter(type="task_updated", payload__task_id=task_id, payload__from_status="acked")
    assert sorted(changed.values_list("audience", "payload__to_status")) == sorted(
        [(OPERATORS, after), (alias, after), (SENDER, after)]
    )
    assert not changed.filter(seq__isnull=True).exists()
    lost = Event.objects.filter(type="lease_lost", payload__task_id=task_id)
    outcome = "requeued" if on_lost == "requeue" else "failed"
    assert sorted(lost.values_list("audience", "payload__outcome")) == sorted(
        [(OPERATORS, outcome), (alias, outcome), (SENDER, outcome)]
    )
    announced = Event.objects.filter(type="new_task", payload__task_id=task_id, audience=alias)
    assert announced.count() == (2 if on_lost == "requeue" else 1)
    # Whatever else the hub tells about the task (the notice's news, ...), it tells each feed once.
    told = [
        (row.audience, row.type, json.dumps(row.payload, sort_keys=True))
        for row in Event.objects.filter(payload__task_id=task_id)
    ]
    assert len(told) == len(set(told)), sorted(told)


def sender_stream_changes(hub: Hub, dispatcher: Agent, *, since: int) -> dict[str, list[tuple[str, str]]]:
    """The task changes the sender's SSE stream delivers after `since`, per task (read up to a marker
    message sent now, so the stream has delivered everything before it); no frame about a task twice."""
    marker = rest(hub, dispatcher, "POST", "/messages", json={"alias": SENDER, "message": "end of the race"})
    assert marker["ok"], marker
    changes: dict[str, list[tuple[str, str]]] = {}
    frames: list[tuple[str, str]] = []  # (type, payload) of every frame about a task
    for _, kind, frame in sse_events(hub, dispatcher, SENDER, last_event_id=since, within=30):
        payload = frame["payload"]
        if kind == "new_message" and payload["message_id"] == marker["message_id"]:
            assert len(frames) == len(set(frames)), f"the stream told something twice: {sorted(frames)}"
            return changes
        if payload.get("task_id"):
            frames.append((kind, json.dumps(payload, sort_keys=True)))
        if kind == "task_updated":
            changes.setdefault(payload["task_id"], []).append((payload["from_status"], payload["to_status"]))
    raise AssertionError("the stream ended before the marker")


def wait_past(moment: datetime) -> None:
    """Until the clock (the hubs' too: one machine) is past `moment`."""
    wait_for(lambda: timezone.now() > moment, within=LEASE_SECONDS + 30, what=f"the clock to pass {moment}", every=0.02)


@pytest.mark.parametrize(("on_lost", "after"), [("requeue", "delivered"), ("fail", "failed")])
def test_a_lapsed_lease_is_applied_once_across_hub_processes_and_sweepers(
    hub_server, agent_http: Agent, network, start_sweeper: Callable[[], Sweeper], on_lost: str, after: str
):
    hubs = hub_server(), hub_server()
    dispatcher, worker = agent_http, Agent(token_create(network=network, role="member", name="worker")[1])
    start = events_position(network_id=network.id)
    sent: list[str] = []

    for round_ in range(ROUNDS):
        alias = f"coder{round_}"
        sweepers = [start_sweeper() for _ in range(SWEEPERS)]  # starting while the task is sent and acked
        # Sent through one process, acked through the other; REST and MCP, inbox ack and send_ack in turn.
        home, other = hubs[round_ % 2], hubs[(round_ + 1) % 2]
        task_id = send(home, dispatcher, alias=alias, on_lost=on_lost, over_mcp=round_ % 2 == 0)
        ack(other, worker, alias=alias, task_id=task_id, from_inbox=round_ % 2 == 0)
        sent.append(task_id)
        for sweeper in sweepers:
            sweeper.ready()

        # The worker is silent from here: wait on the clock, since any read of the task would settle it.
        lapse = Task.objects.values_list("lease_expires_at", flat=True).get(pk=task_id)
        assert lapse is not None
        wait_past(lapse)

        racers = [
            call for hub in hubs for call in readers(hub, dispatcher, worker, alias=alias, task_id=task_id, after=after)
        ]
        racers += [functools.partial(sweeper.run, STAGGER[round_ % len(STAGGER)]) for sweeper in sweepers]
        race(*racers)

        assert_applied_once(task_id, alias=alias, on_lost=on_lost, after=after)

    changes = sender_stream_changes(hubs[1], dispatcher, since=start)
    assert changes == {task_id: [("delivered", "acked"), ("acked", after)] for task_id in sent}
    for hub in hubs:
        assert_clean_log(hub)
