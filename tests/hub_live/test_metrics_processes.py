"""/metrics across processes (issue 19): two live hubs share one PROMETHEUS_MULTIPROC_DIR, a scripted
workload goes through both, and a scrape of either shows the whole hub: every counter moved by
exactly what the workload did, wherever it happened, the open-stream gauge counts a stream held by
the other process, and the state gauges match the database.

On both databases (PostgreSQL with Redis in CI's second run).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import httpx
import pytest
from django.db.models import Count

from hub_agents.services import token_create
from hub_tasks.models import InboxMessage, Task
from tests.helpers.live import Agent, Hub, sse_events, wait_for
from tests.helpers.metrics import Samples, moved, parse, value

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "metrics-test-token"
LEAD, CODER, REVIEWER, SLEEPER = "lead", "coder", "reviewer", "sleeper"
WRITE_LIMIT = 40  # per token and minute: the workload's token stays under it, the spammer's does not


class Workload:
    """The scripted calls, each counted by route and status as the hubs should count them."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.requests: Counter[tuple[str, str]] = Counter()

    def api(self, hub: Hub, method: str, path: str, *, agent: Agent | None = None, **body: Any) -> httpx.Response:
        reply = httpx.request(
            method,
            f"{hub.url}/api/v1{path}",
            json=body or None,
            headers=(agent or self.agent).headers,
            timeout=30,
        )
        self.requests["api", str(reply.status_code)] += 1
        assert reply.status_code < 500, reply.text
        return reply

    def ok(self, hub: Hub, method: str, path: str, **body: Any) -> dict[str, Any]:
        reply = self.api(hub, method, path, **body)
        assert reply.status_code in (200, 201), reply.text
        return reply.json()

    def send(self, hub: Hub, alias: str, **extra: Any) -> str:
        return self.ok(hub, "POST", "/tasks", alias=alias, task=f"work for {alias}", from_session=LEAD, **extra)[
            "task_id"
        ]

    def inbox(self, hub: Hub, alias: str) -> list[dict[str, Any]]:
        return self.ok(hub, "GET", f"/sessions/{alias}/inbox")["messages"]

    def take(self, hub: Hub, alias: str, message_id: str) -> None:
        self.ok(hub, "POST", f"/sessions/{alias}/inbox/{message_id}/ack")

    def reply(self, hub: Hub, task_id: str, status: str) -> None:
        self.ok(
            hub, "POST", "/replies", alias=LEAD, text=status, in_reply_to=task_id, status=status, from_session=CODER
        )

    def scrape(self, hub: Hub) -> Samples:
        reply = httpx.get(f"{hub.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        assert reply.status_code == 200, reply.text
        self.requests["metrics", "200"] += 1
        return parse(reply.text)


def test_two_processes_report_one_truth(hub_server, agent_http, network, tmp_path):
    env = {
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
        "COMMHUB_METRICS_TOKEN": TOKEN,
        "COMMHUB_WRITE_RATE_LIMIT": f"{WRITE_LIMIT}/minute",
    }
    a, b = hub_server(env=env), hub_server(env=env)
    net = network.pk
    work = Workload(agent_http)
    before = work.scrape(a)

    # Five tasks, sent through both processes; the coder's may be retried once automatically.
    coder = [work.send(hub, CODER, max_attempts=2, retry_backoff_seconds=1) for hub in (a, b, a)]
    for hub in (b, a):
        work.send(hub, REVIEWER)
    work.ok(a, "POST", "/sessions/report", alias=CODER, status="working", resume_id="resume-coder")

    # The reviewer's stream on B replays its two tasks (their receipts: via sse); while it is open, a
    # scrape of A counts it.
    stream = sse_events(b, agent_http, REVIEWER, last_event_id=0)
    seen: list[str] = []
    for _, kind, frame in stream:
        if kind == "new_task":
            seen.append(frame["payload"]["task_id"])
        if len(seen) == 2:
            break
    work.requests["events", "200"] += 1
    wait_for(lambda: value(work.scrape(a), "commhub_open_streams", transport="sse") == 1, within=10, what="1 stream")
    stream.close()
    wait_for(lambda: value(work.scrape(a), "commhub_open_streams", transport="sse") == 0, within=10, what="0 streams")

    # The coder reads on A (three first deliveries via get_inbox), acks on B, finishes one, fails one.
    messages = {m["task_id"]: m["id"] for m in work.inbox(a, CODER)}
    assert set(messages) == set(coder)
    for task_id in coder[:2]:
        work.take(b, CODER, messages[task_id])
    work.reply(a, coder[0], "replied")
    work.reply(b, coder[1], "failed")  # attempt 1 of 2: an automatic retry, within a second
    retried = wait_for(
        lambda: [m for m in work.inbox(b, CODER) if m["task_id"] == coder[1]], within=10, what="the retry"
    )  # its second attempt: one more first delivery via get_inbox (on B)
    work.take(a, CODER, retried[0]["id"])
    work.reply(a, coder[1], "failed")  # the last attempt: dead-lettered
    work.ok(b, "POST", f"/tasks/{coder[1]}/retry")  # a person sends it again (left unread)

    # The sleeper takes a task with a 1 s lease and goes silent; a read on B settles the lapse.
    sleepy = work.send(a, SLEEPER, lease_seconds=1)
    (message,) = work.inbox(a, SLEEPER)
    work.take(a, SLEEPER, message["id"])
    time.sleep(1.5)
    assert work.ok(b, "GET", f"/tasks/{sleepy}")["task"]["status"] == "delivered"  # requeued

    # Another token writes past its limit on each process.
    spammer = Agent(token_create(network=network, role="member", name="spammer")[1])
    refused = 0
    for hub in (a, b):
        for _ in range(WRITE_LIMIT + 1):
            reply = work.api(hub, "POST", "/messages", agent=spammer, alias="sink", message="hi", from_session="spam")
            if reply.status_code == 429:
                refused += 1
                break
    assert refused == 2

    scrapes = work.requests["metrics", "200"]  # a scrape counts itself as it answers: after its body is made
    after_a, after_b = work.scrape(a), work.scrape(b)
    del work.requests["metrics", "200"]
    assert moved(before, after_a, "commhub_http_requests_total", route="metrics", status="200") == scrapes
    assert moved(before, after_b, "commhub_http_requests_total", route="metrics", status="200") == scrapes + 1

    # The counters: one truth whichever process answers, moved by exactly the workload.
    counters = [
        ("commhub_lease_lapses_total", {"network": net, "outcome": "requeued"}, 1),
        ("commhub_task_retries_total", {"network": net, "kind": "automatic"}, 1),
        ("commhub_task_retries_total", {"network": net, "kind": "manual"}, 1),
        ("commhub_dead_letters_total", {"network": net}, 1),
        ("commhub_rate_limit_refusals_total", {"limit": "write"}, refused),
        ("commhub_dispatch_to_delivery_seconds_count", {"via": "get_inbox"}, 3 + 1 + 1),
        ("commhub_dispatch_to_delivery_seconds_count", {"via": "sse"}, 2),
        ("commhub_dispatch_to_delivery_seconds_count", {"via": "ack_inbox"}, 0),
        ("commhub_open_streams", {"transport": "sse"}, 0),
    ]
    for (route, status), count in work.requests.items():
        counters.append(("commhub_http_requests_total", {"route": route, "status": status}, count))
    for name, labels, expected in counters:
        assert moved(before, after_a, name, **labels) == expected, (name, labels)
        assert value(after_b, name, **labels) == value(after_a, name, **labels), (name, labels)
    assert moved(before, after_a, "commhub_http_requests_total", route="api", status="429") == refused

    # The state: read from the database by the answering process, once.
    tasks = Task.objects.filter(network=network).values("status").annotate(n=Count("pk"))
    assert {row["status"]: row["n"] for row in tasks} == {
        status: value(after_a, "commhub_tasks", network=net, status=status)
        for status in ("delivered", "acked", "replied", "failed", "created", "running")
        if value(after_a, "commhub_tasks", network=net, status=status)
    }
    pending = InboxMessage.objects.filter(network=network, acked_at__isnull=True)
    for alias in (CODER, REVIEWER, SLEEPER, "sink"):
        assert value(after_a, "commhub_inbox_depth", network=net, alias=alias) == pending.filter(to_alias=alias).count()
    assert value(after_a, "commhub_inbox_depth", network=net, alias=CODER) == 2  # coder[2], and coder[1] again
    assert value(after_a, "commhub_agents", network=net, status="working") == 1
    assert value(after_a, "commhub_state_up") == value(after_b, "commhub_state_up") == 1
