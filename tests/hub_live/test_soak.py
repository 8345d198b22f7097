"""The soak: a mixed agent workload against two hub processes on PostgreSQL + Redis, then the books.

For COMMHUB_SOAK_SECONDS (300 in CI) an operator sends tasks (some to an alias nobody serves, with
a one-second TTL, so they expire; some cancelled or reassigned at once), and three agents, two
over MCP on one process and one over REST on the other, long-poll, ack, report working and
complete. An SSE client follows one agent's feed. At the end every count reconciles and no call
failed: every answer was a success or a refusal the contract names, never a 5xx or a dropped
connection.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.db import connection

from hub_agents.services import token_create
from hub_events.models import Event
from hub_events.selectors import events_position
from hub_tasks.models import Completion, InboxMessage, Task, TaskStatus
from tests.helpers.live import Agent, Hub, sse_events

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

SOAK_SECONDS = float(os.environ.get("COMMHUB_SOAK_SECONDS", "300"))
SERVED = ["soak-0", "soak-1", "soak-2"]
GHOST = "soak-ghost"  # nobody serves it: its tasks expire
SEND_EVERY = 0.25  # seconds between tasks: ~240 writes a minute per token, under the default limit


@dataclass
class Books:
    """What the clients were told, to reconcile with the database afterwards."""

    sent: set[str] = field(default_factory=set)
    ghost: set[str] = field(default_factory=set)
    cancelled: set[str] = field(default_factory=set)
    closing_completions: set[str] = field(default_factory=set)  # completions that closed their task
    completions: int = 0
    errors: list[str] = field(default_factory=list)
    refusals: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def error(self, what: str) -> None:
        with self.lock:
            self.errors.append(what)


def checked(books: Books, reply: httpx.Response, what: str) -> dict[str, Any] | None:
    """The body of a success; None (and a note) for a refusal; an error for anything else."""
    if reply.status_code in (200, 201):
        return reply.json()
    if reply.status_code == 409:  # e.g. cancel of a task an agent already finished: the contract's refusal
        books.refusals[f"{what}: {reply.json()['error']}"] += 1
        return None
    books.error(f"{what}: HTTP {reply.status_code} {reply.text[:200]}")
    return None


def operator(hub: Hub, agent: Agent, books: Books, until: float) -> None:
    with httpx.Client(headers=agent.headers, timeout=30, base_url=hub.url) as client:
        for n in itertools.count():
            if time.monotonic() >= until:
                return
            time.sleep(SEND_EVERY)
            ghost = n % 10 == 0
            body = {"alias": GHOST if ghost else SERVED[n % 3], "task": f"soak job {n}"}
            if ghost:
                body["ttl_seconds"] = 1
            try:
                sent = checked(books, client.post("/api/v1/tasks", json=body), "send_task")
                if sent is None:
                    continue
                with books.lock:
                    books.sent.add(sent["task_id"])
                    if ghost:
                        books.ghost.add(sent["task_id"])
                if ghost:
                    continue  # left alone, to expire
                if n % 7 == 3:
                    cancel = client.post(f"/api/v1/tasks/{sent['task_id']}/cancel", json={"reason": "soak"})
                    if checked(books, cancel, "cancel_task"):
                        with books.lock:
                            books.cancelled.add(sent["task_id"])
                elif n % 11 == 5:
                    to = {"new_alias": SERVED[(n + 1) % 3]}
                    checked(books, client.post(f"/api/v1/tasks/{sent['task_id']}/reassign", json=to), "reassign")
            except httpx.HTTPError as failure:
                books.error(f"operator: {failure!r}")


def serve(hub: Hub, agent: Agent, alias: str, books: Books, until: float, *, mcp: bool) -> None:
    """An agent's loop: long-poll the inbox, ack, report working, complete."""
    with httpx.Client(headers=agent.headers, timeout=30, base_url=hub.url) as client:

        def call(tool: str, path: str, method: str = "post", **arguments: Any) -> dict[str, Any] | None:
            """The tool over MCP, or its REST endpoint (arguments named in the path stay out of the body)."""
            if mcp:
                result = agent.mcp(hub, tool, client=client, **arguments)
                if result.get("ok"):
                    return result
                books.refusals[f"{tool}: {result.get('error')}"] += 1
                return None
            given = {name: value for name, value in arguments.items() if f"/{value}/" not in f"{path}/"}
            if method == "get":
                return checked(books, client.get(path, params=given), tool)
            return checked(books, client.post(path, json=given), tool)

        while time.monotonic() < until:
            try:
                inbox = call("get_inbox", f"/api/v1/sessions/{alias}/inbox", "get", alias=alias, wait_seconds=2)
                for message in (inbox or {}).get("messages", []):
                    call("ack_inbox", f"/api/v1/sessions/{alias}/inbox/{message['id']}/ack", alias=alias,
                         message_id=message["id"])  # fmt: skip
                    if not message.get("task_id"):
                        continue
                    status = {"alias": alias, "resume_id": f"resume-{alias}", "status": "working"}
                    call("report_status", "/api/v1/sessions/report", **status, task=message["task_id"])
                    done = call("report_completion", "/api/v1/completions", alias=alias, task=message["task_id"],
                                result="done", score=8)  # fmt: skip
                    if done is not None:
                        with books.lock:
                            books.completions += 1
                            if done.get("task_id") and "warning" not in done:
                                books.closing_completions.add(done["task_id"])
            except (httpx.HTTPError, AssertionError) as failure:
                books.error(f"{alias}: {failure!r}")


@pytest.fixture(autouse=True)
def shared_services():
    if connection.vendor != "postgresql" or not settings.REDIS_URL:
        pytest.skip("needs PostgreSQL and Redis shared by two processes (CI's second run)")


def test_a_mixed_workload_on_two_processes_reconciles_with_no_errors(hub_server, network):
    hub_a, hub_b = hub_server(), hub_server()
    agents = {alias: Agent(token_create(network=network, name=alias)[1]) for alias in SERVED}
    boss = Agent(token_create(network=network, name="soak-operator")[1])
    books = Books()
    start = events_position(network_id=network.id)
    until = time.monotonic() + SOAK_SECONDS
    drain = until + 8  # agents keep serving a little longer, to empty their inboxes

    streamed: list[tuple[int, str, dict[str, Any]]] = []

    def follow() -> None:
        try:
            for frame in sse_events(hub_b, agents["soak-0"], "soak-0", last_event_id=start, within=SOAK_SECONDS + 60):
                streamed.append(frame)
                if time.monotonic() > drain:
                    return
        except httpx.TransportError:
            return  # the test is over and its servers stopped, with the stream still open

    threads = [
        threading.Thread(target=operator, args=(hub_a, boss, books, until)),
        threading.Thread(target=serve, args=(hub_b, agents["soak-0"], "soak-0", books, drain), kwargs={"mcp": True}),
        threading.Thread(target=serve, args=(hub_b, agents["soak-1"], "soak-1", books, drain), kwargs={"mcp": True}),
        threading.Thread(target=serve, args=(hub_a, agents["soak-2"], "soak-2", books, drain), kwargs={"mcp": False}),
        threading.Thread(target=follow, daemon=True),
    ]
    for thread in threads:
        thread.start()
    for thread in threads[:-1]:
        thread.join(timeout=SOAK_SECONDS + 120)
    time.sleep(1.5)  # the last ghost tasks pass their deadline
    Agent.inbox(boss, hub_a, GHOST)  # any read settles deadlines

    assert books.errors == []
    assert len(books.sent) >= SOAK_SECONDS / SEND_EVERY / 2, "the workload never got going"
    tasks = Task.objects.filter(network=network)
    status = Counter(tasks.values_list("status", flat=True))
    # Every task sent is accounted for, in exactly one final state.
    assert set(tasks.values_list("pk", flat=True)) == books.sent
    assert status[TaskStatus.EXPIRED] == len(books.ghost - books.cancelled)
    assert status[TaskStatus.CANCELLED] == len(books.cancelled)
    assert status[TaskStatus.REPLIED] == len(books.closing_completions)
    assert sum(status.values()) == len(books.sent)
    assert status[TaskStatus.REPLIED] + status[TaskStatus.EXPIRED] + status[TaskStatus.CANCELLED] == len(books.sent)
    # Completions: one row per completion the agents were told was recorded, one per replied task.
    assert Completion.objects.filter(network=network).count() == books.completions
    assert set(Task.objects.filter(status=TaskStatus.REPLIED).values_list("pk", flat=True)) == books.closing_completions
    # Nothing is left waiting in a served inbox, and no finished task waits anywhere.
    assert not InboxMessage.objects.filter(network=network, to_alias__in=SERVED, acked_at__isnull=True).exists()
    finished = ["replied", "expired", "cancelled"]
    assert not InboxMessage.objects.filter(type="task", task__status__in=finished, acked_at=None).exists()
    # The operator was told of each expiry exactly once.
    notices = InboxMessage.objects.filter(network=network, type="notice").values_list("task_id", flat=True)
    assert sorted(notices) == sorted(tasks.filter(status=TaskStatus.EXPIRED).values_list("pk", flat=True))
    # The SSE client saw every event of its feed once, in order.
    logged = list(
        Event.objects.filter(network=network, audience="soak-0", seq__gt=start)
        .filter(seq__lte=streamed[-1][0] if streamed else 0)
        .order_by("seq")
        .values_list("seq", flat=True)
    )
    assert [event_id for event_id, _, _ in streamed] == logged
    assert len(logged) > 0
