"""The hub's Prometheus metrics that the layers below the transports count: one definition each.

Plain prometheus_client objects, process-local. With PROMETHEUS_MULTIPROC_DIR set before a process
starts (gunicorn's workers, the sweep), each process writes its values to files there and /metrics
(commhub.metrics) adds them up over every process, the dead ones' counts included. What the
database already knows (tasks by status, inbox depth, agents, the event log) is not counted here:
/metrics reads it at scrape time.

A domain fact counts once its transaction commits (`transaction.on_commit`): a rolled-back write
counts nothing, and a write retried after a rollback counts once.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import transaction
from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics

# No `<name>_created` series beside each counter: multiprocess mode cannot give them, and the two
# modes should export the same names.
disable_created_metrics()

LEASE_LAPSES = Counter(
    "commhub_lease_lapses_total",
    "Leases that lapsed (the agent was silent past its lease), by how the task went on.",
    ["network", "outcome"],  # outcome: requeued, reopened, retry_scheduled, failed
)
RETRIES = Counter(
    "commhub_task_retries_total",
    "Tasks sent again: automatic (a failed attempt held for its next one) or manual (retry_task).",
    ["network", "kind"],
)
DEAD_LETTERS = Counter(
    "commhub_dead_letters_total",
    "Tasks dead-lettered: their last automatic attempt failed.",
    ["network"],
)
RATE_LIMIT_REFUSALS = Counter(
    "commhub_rate_limit_refusals_total",
    "Calls refused by a rate limit: write (a token's writes) or login (failed logins locked).",
    ["limit"],
)
DISPATCH_TO_DELIVERY = Histogram(
    "commhub_dispatch_to_delivery_seconds",
    "From a task message entering its agent's inbox to it first reaching the agent, by how it got there.",
    ["via"],  # get_inbox, sse, ack_inbox (hub_tasks.models.DeliveredVia)
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600),
)
WEBHOOK_DELIVERIES = Counter(
    "commhub_webhook_deliveries_total",
    "Outbound webhook POSTs (hub_webhooks), by outcome: delivered (2xx), failed (another status or no answer)"
    " or refused (not sent: the address check failed).",
    ["network", "outcome"],
)
OPEN_STREAMS = Gauge(
    "commhub_open_streams",
    "Connected live streams: sse (agents' /events) and websocket (the dashboard's /ws/dashboard).",
    ["transport"],
    # Summed over the live processes: a worker that died takes its streams with it.
    multiprocess_mode="livesum",
)


def count_on_commit(counter: Counter, **labels: str) -> None:
    """Count one of `counter` once the running transaction commits (at once outside one)."""
    # The series is made only then too: a rolled-back write leaves no trace, not even a zero.
    transaction.on_commit(lambda: counter.labels(**labels).inc())


def deliveries_observe(dispatched: Iterable[datetime], *, via: str, now: datetime) -> None:
    """Task messages dispatched at these times first reached their agent `now`: their
    dispatch-to-delivery latency, observed once the running transaction commits."""
    dispatched = list(dispatched)
    if dispatched:
        transaction.on_commit(lambda: deliveries_observed(dispatched, via=via, now=now))


def deliveries_observed(dispatched: Iterable[datetime], *, via: str, now: datetime) -> None:
    """deliveries_observe, at once: for a caller that knows its write committed (the fast lane's)."""
    seconds = [max(0.0, (now - at).total_seconds()) for at in dispatched]
    if seconds:
        child = DISPATCH_TO_DELIVERY.labels(via=via)
        for value in seconds:
            child.observe(value)
