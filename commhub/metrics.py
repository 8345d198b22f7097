"""GET /metrics: the hub in Prometheus' text format, and the HTTP request counts it includes.

Three sources make one answer:
- the counters, histograms and gauges the processes keep (hub_core.metrics, and the request counts
  below). With PROMETHEUS_MULTIPROC_DIR set before the processes start, every process (each gunicorn
  worker, the sweep) writes its values to files there and this view adds them up, so whichever
  worker answers, the numbers are the whole hub's; without it, the answering process's own;
- the hub's state, read from the database at scrape time by `HubState`, in one process (the one
  answering), with one bounded aggregate query per kind: tasks by network and status (the TaskCount
  rows), inboxes with pending messages, agent sessions by status, the event log's feed positions,
  runs' tokens and cost (the AgentUsage rows, summed as each run's usage is recorded: counters
  that no restart or worker resets), and each budget's spend, limits and waiting tasks.

Who may scrape: with COMMHUB_METRICS_TOKEN set, a caller sending `Authorization: Bearer <it>`;
without it, only a client on this machine (a loopback address, and no proxy's forwarding header:
behind a proxy on the same host every client would look local).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from commhub.lean import Receive, Scope, Send
from hub_agents.selectors import agents_by_network_status
from hub_core.bearer import says_bearer
from hub_events.models import OPERATORS
from hub_events.selectors import feed_head, feed_heads
from hub_tasks.selectors import budget_gauges, inbox_depths, tasks_by_network_status, usage_by_network_agent_model
from hub_webhooks.selectors import webhook_cursors

logger = logging.getLogger(__name__)
App = Callable[[Scope, Receive, Send], Awaitable[None]]

REQUESTS = Counter(
    "commhub_http_requests_total",
    "HTTP requests answered, by route group and status code (none: the client left before an answer).",
    ["route", "status"],
)
REQUEST_SECONDS = Histogram(
    "commhub_http_request_duration_seconds",
    "From a request's arrival to its response's start (for a stream: until it opened), by route group.",
    ["route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)

# Path prefixes and the route group they count under; everything else is the dashboard.
ROUTES = (
    ("/mcp", "mcp"),
    ("/api/", "api"),
    ("/events/", "events"),
    ("/admin/", "admin"),
    ("/static/", "static"),
    ("/healthz", "healthz"),
    ("/metrics", "metrics"),
    ("/.well-known/", "well_known"),
)
# Headers a proxy adds: a request carrying one came through it, whatever REMOTE_ADDR says.
FORWARDED = ("X-Forwarded-For", "Forwarded", "X-Real-IP")
TOKEN_HELP = 'Send the metrics token as "Authorization: Bearer <COMMHUB_METRICS_TOKEN>".'
NO_TOKEN_HELP = (
    "/metrics answers only clients on this machine while COMMHUB_METRICS_TOKEN is unset: set it, "
    'and scrape with "Authorization: Bearer <token>" (Prometheus: authorization.credentials).'
)


def route_of(path: str) -> str:
    return next((name for prefix, name in ROUTES if path.startswith(prefix)), "dashboard")


def requests_counted(app: App) -> App:
    """An ASGI app counting each HTTP request it serves (ahead of Django and of commhub.lean, so agents'
    calls count too): its route group, its status, the time to its response's start."""

    async def counted(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        route, started, answered = route_of(scope["path"]), time.perf_counter(), False

        async def send_counted(message: dict[str, Any]) -> None:
            nonlocal answered
            if message["type"] == "http.response.start":
                # Counted before the answer leaves: a client that has it finds it counted.
                answered = True
                REQUEST_SECONDS.labels(route=route).observe(time.perf_counter() - started)
                REQUESTS.labels(route=route, status=str(message["status"])).inc()
            await send(message)

        try:
            await app(scope, receive, send_counted)
        finally:
            if not answered:
                REQUESTS.labels(route=route, status="none").inc()

    return counted


class HubState(Collector):
    """The hub's state, read from the database when /metrics is scraped (never per row in Python)."""

    def collect(self) -> Iterator[Metric]:
        started = time.perf_counter()
        try:
            families = list(self._read())
        except DatabaseError:
            logger.warning("/metrics: the database could not be read; only the processes' counts answer", exc_info=True)
            families, up = [], 0
        else:
            up = 1
        yield from families
        yield GaugeMetricFamily("commhub_state_up", "1 if this scrape read the hub's state from the database.", up)
        yield GaugeMetricFamily(
            "commhub_state_read_seconds", "How long this scrape took to read the state.", time.perf_counter() - started
        )

    def _read(self) -> Iterator[Metric]:
        now = timezone.now()
        tasks = GaugeMetricFamily("commhub_tasks", "Tasks by network and status.", labels=["network", "status"])
        for network, status, count in tasks_by_network_status():
            tasks.add_metric([network, status], count)
        yield tasks

        depth = GaugeMetricFamily(
            "commhub_inbox_depth", "Messages waiting in an inbox (not acked yet).", labels=["network", "alias"]
        )
        oldest = GaugeMetricFamily(
            "commhub_inbox_oldest_pending_age_seconds",
            "Age of the oldest message waiting in an inbox.",
            labels=["network", "alias"],
        )
        for network, alias, count, created_at in inbox_depths():
            depth.add_metric([network, alias], count)
            oldest.add_metric([network, alias], max(0.0, (now - created_at).total_seconds()))
        yield depth
        yield oldest

        agents = GaugeMetricFamily(
            "commhub_agents",
            "Agent sessions by status as everyone reads it (offline once silent past COMMHUB_OFFLINE_AFTER_SECONDS).",
            labels=["network", "status"],
        )
        for network, status, count in agents_by_network_status(now=now):
            agents.add_metric([network, status], count)
        yield agents

        position = GaugeMetricFamily(
            "commhub_event_log_position",
            "The newest position (seq) in a network's event feed; its rate is the events delivered per second.",
            labels=["network"],
        )
        unsealed = GaugeMetricFamily(
            "commhub_event_log_unsealed",
            "Events committed but without a feed position yet: no reader can be handed them (above 0 for long: "
            "a process died between commit and seal; readers seal them within COMMHUB_STREAM_RECHECK_SECONDS).",
            labels=["network"],
        )
        for network, head, waiting in feed_heads():
            position.add_metric([network], head)
            unsealed.add_metric([network], waiting)
        yield position
        yield unsealed

        # The feeds whose delivered position the hub keeps: each webhook's cursor. (Streams and the
        # dashboard keep theirs on the reader's side: Last-Event-ID, ?after=, the companion's file.)
        lag = GaugeMetricFamily(
            "commhub_event_log_lag",
            "Positions between a feed's newest and what its reader has delivered (feed webhook:<id>: the "
            "operators' feed a webhook sends).",
            labels=["network", "feed"],
        )
        operators: dict[str, int] = {}
        for network, subscription, cursor in webhook_cursors():
            if network not in operators:
                operators[network] = feed_head(network_id=network, audience=OPERATORS)
            lag.add_metric([network, f"webhook:{subscription}"], max(0, operators[network] - cursor))
        yield lag

        tokens = CounterMetricFamily(
            "commhub_run_tokens",
            "Tokens agents' runs used, as reported with report_completion or send_reply (model: empty if none "
            "was named; direction: in or out).",
            labels=["network", "agent", "model", "direction"],
        )
        cost = CounterMetricFamily(
            "commhub_run_cost_usd",
            "USD agents' runs cost, as reported with report_completion or send_reply.",
            labels=["network", "agent", "model"],
        )
        for network, alias, model, tokens_in, tokens_out, usd in usage_by_network_agent_model():
            tokens.add_metric([network, alias, model, "in"], tokens_in)
            tokens.add_metric([network, alias, model, "out"], tokens_out)
            cost.add_metric([network, alias, model], usd)
        yield tokens
        yield cost
        yield from self._budgets(now)

    def _budgets(self, now: datetime) -> Iterator[Metric]:
        """Each budget's spend of its period now, its limits (a limit not set: no series) and the tasks
        waiting for it; alias "" : the network's own."""
        labels = ["network", "alias", "period"]
        spent_usd = GaugeMetricFamily(
            "commhub_budget_spent_usd", "USD a budget's scope spent this period.", labels=labels
        )
        limit_usd = GaugeMetricFamily("commhub_budget_limit_usd", "A budget's USD per period.", labels=labels)
        spent_tokens = GaugeMetricFamily(
            "commhub_budget_spent_tokens", "Tokens (in + out) a budget's scope used this period.", labels=labels
        )
        limit_tokens = GaugeMetricFamily("commhub_budget_limit_tokens", "A budget's tokens per period.", labels=labels)
        waiting = GaugeMetricFamily(
            "commhub_budget_waiting_tasks", "Tasks waiting for a spent budget (on_limit hold).", labels=labels
        )
        for network, alias, period, usd, tokens, usd_limit, token_limit, held in budget_gauges(now=now):
            key = [network, alias, period]
            spent_usd.add_metric(key, usd)
            spent_tokens.add_metric(key, tokens)
            waiting.add_metric(key, held)
            if usd_limit is not None:
                limit_usd.add_metric(key, usd_limit)
            if token_limit is not None:
                limit_tokens.add_metric(key, token_limit)
        yield from (spent_usd, limit_usd, spent_tokens, limit_tokens, waiting)


class _ThisProcess(Collector):
    """The answering process's own metrics (no PROMETHEUS_MULTIPROC_DIR: one process, or a test)."""

    def collect(self) -> Iterable[Metric]:
        return REGISTRY.collect()


def multiprocess() -> bool:
    # The test prometheus_client makes when it is imported to choose where values live (settings
    # refused an empty or missing directory).
    return "PROMETHEUS_MULTIPROC_DIR" in os.environ


def registry() -> CollectorRegistry:
    """What one scrape answers: every process's values (or this one's), and the hub's state once."""
    answer = CollectorRegistry()
    if multiprocess():
        MultiProcessCollector(answer)
    else:
        answer.register(_ThisProcess())
    answer.register(HubState())
    return answer


def _refusal(request: HttpRequest) -> HttpResponse | None:
    configured = settings.COMMHUB_METRICS_TOKEN
    if configured:
        header = request.headers.get("Authorization", "")
        _, _, given = header.partition(" ")
        if says_bearer(header) and hmac.compare_digest(given.strip().encode(), configured.encode()):
            return None
        reply = HttpResponse(TOKEN_HELP + "\n", status=401, content_type="text/plain; charset=utf-8")
        reply["WWW-Authenticate"] = 'Bearer realm="commhub metrics"'
        return reply
    if _is_loopback(request.META.get("REMOTE_ADDR", "")) and not any(request.headers.get(h) for h in FORWARDED):
        return None
    return HttpResponse(NO_TOKEN_HELP + "\n", status=403, content_type="text/plain; charset=utf-8")


def _is_loopback(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    refused = _refusal(request)
    if refused is not None:
        return refused
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    reply = HttpResponse(encode(registry()), content_type=content_type)
    reply["Cache-Control"] = "no-store"
    return reply
