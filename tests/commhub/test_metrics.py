"""GET /metrics, in one process: who may scrape it, its format, the state it reads from the database
and the counters the domain moves (once its transaction commits).

Scraped through Django's test client (the real URL conf and middleware), parsed by prometheus_client's
own parser. Counters are the test process's, shared by every test: each test asserts how much a
counter moved between two scrapes, never its value. The scrape across two hub processes is
tests/hub_live/test_metrics_processes.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from asgiref.testing import ApplicationCommunicator
from django.contrib.auth import authenticate
from django.db import transaction
from django.test import Client

from hub_agents.services import membership_set, token_create
from hub_core import ratelimit
from hub_core.errors import HubError
from hub_events.selectors import events_position
from hub_tasks.models import Task
from tests.helpers import ROOT
from tests.helpers.asgi import ask, scope
from tests.helpers.calls import ack_inbox, get_inbox, get_task, retry_task, send_reply, send_task, send_task_id
from tests.helpers.dashboard import signed_in, websocket
from tests.helpers.metrics import Samples, families, moved, parse, series, value
from tests.helpers.tasks import take

CODER, REVIEWER, LEAD = "coder", "reviewer", "lead"
DASHBOARD = ROOT / "docs" / "grafana" / "commhub.json"


def scrape(client: Client | None = None, **headers: Any) -> str:
    reply = (client or Client()).get("/metrics", **headers)
    assert reply.status_code == 200, reply.content
    return reply.content.decode()


send = partial(send_task_id, task="deploy the site")


def fail(agent, task_id: str) -> None:
    send_reply(actor=agent, alias=LEAD, text="broke", in_reply_to=task_id, status="failed", from_session=CODER)


# --- who may scrape ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_without_a_token_a_client_on_this_machine_is_answered_in_prometheus_text_format(settings):
    settings.COMMHUB_METRICS_TOKEN = ""
    for address in ("127.0.0.1", "::1", "127.0.0.53"):
        reply = Client(REMOTE_ADDR=address).get("/metrics")
        assert reply.status_code == 200, (address, reply.content)
        assert reply["Content-Type"].startswith("text/plain; version=")
        assert reply["Cache-Control"] == "no-store"
    kinds = families(reply.content.decode())
    assert kinds["commhub_tasks"] == "gauge"
    assert kinds["commhub_dispatch_to_delivery_seconds"] == "histogram"
    assert kinds["commhub_lease_lapses"] == "counter"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "address, headers",
    [
        ("192.0.2.7", {}),
        ("10.1.2.3", {}),
        # A proxy on this machine: the client's address is in its header, not REMOTE_ADDR.
        ("127.0.0.1", {"HTTP_X_FORWARDED_FOR": "203.0.113.9"}),
        ("127.0.0.1", {"HTTP_FORWARDED": "for=203.0.113.9"}),
        ("::1", {"HTTP_X_REAL_IP": "203.0.113.9"}),
    ],
)
def test_without_a_token_anyone_else_is_refused_and_told_to_set_one(settings, address, headers):
    settings.COMMHUB_METRICS_TOKEN = ""
    reply = Client(REMOTE_ADDR=address).get("/metrics", **headers)
    assert reply.status_code == 403
    assert "COMMHUB_METRICS_TOKEN" in reply.content.decode()
    assert "commhub_" not in reply.content.decode()


@pytest.mark.django_db
def test_with_a_token_set_only_a_scraper_sending_it_is_answered_wherever_it_is(settings):
    settings.COMMHUB_METRICS_TOKEN = "s3cret-metrics-token"
    local, remote = Client(REMOTE_ADDR="127.0.0.1"), Client(REMOTE_ADDR="192.0.2.7")
    for refused in (
        local.get("/metrics"),  # the token is needed from this machine too once it is set
        remote.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong"),
        remote.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-metrics-token-and-more"),
        remote.get("/metrics", HTTP_AUTHORIZATION="Basic s3cret-metrics-token"),
        remote.get("/metrics", HTTP_AUTHORIZATION="s3cret-metrics-token"),
    ):
        assert refused.status_code == 401
        assert refused["WWW-Authenticate"].startswith("Bearer")
        assert "commhub_" not in refused.content.decode()
    answered = remote.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-metrics-token", HTTP_X_FORWARDED_FOR="x")
    assert answered.status_code == 200
    assert "commhub_tasks" in answered.content.decode()


@pytest.mark.django_db
def test_metrics_is_read_only():
    assert Client().post("/metrics").status_code == 405


# --- the state, read at scrape time ----------------------------------------------------------------


def test_tasks_inboxes_agents_and_the_event_log_are_read_from_the_database(agent, network, online, clock):
    first = send(agent, ttl_seconds=86400)
    clock.tick(30)
    send(agent, ttl_seconds=86400)
    send(agent, alias=REVIEWER, ttl_seconds=86400)
    take(agent, first)  # acked: out of the coder's inbox
    online(CODER, status="working")
    online(REVIEWER, status="idle")
    online("sleeper", status="idle")
    clock.tick(timedelta(hours=1))  # everyone silent past COMMHUB_OFFLINE_AFTER_SECONDS
    online(CODER, status="working")

    samples = parse(scrape())
    net = network.pk
    tasks = {dict(labels)["status"]: n for labels, n in series(samples, "commhub_tasks").items()}
    assert tasks == {"delivered": 2, "acked": 1}  # statuses with no task are left out
    assert value(samples, "commhub_inbox_depth", network=net, alias=CODER) == 1
    assert value(samples, "commhub_inbox_depth", network=net, alias=REVIEWER) == 1
    # The coder's oldest pending message is the second task, sent an hour ago; the first was acked.
    assert value(samples, "commhub_inbox_oldest_pending_age_seconds", network=net, alias=CODER) == 3600
    assert value(samples, "commhub_inbox_oldest_pending_age_seconds", network=net, alias=REVIEWER) == 3600
    assert (net, LEAD) not in {(dict(k)["network"], dict(k)["alias"]) for k in series(samples, "commhub_inbox_depth")}
    assert value(samples, "commhub_agents", network=net, status="working") == 1
    assert value(samples, "commhub_agents", network=net, status="offline") == 2
    assert value(samples, "commhub_agents", network=net, status="idle") == 0
    assert value(samples, "commhub_event_log_position", network=net) == events_position(network_id=net) > 0
    assert value(samples, "commhub_event_log_unsealed", network=net) == 0
    assert value(samples, "commhub_state_up") == 1


# --- counters the domain moves, once its transaction commits ----------------------------------------


def test_a_lapsed_lease_counts_once_with_how_it_went_on(agent, network, clock, django_capture_on_commit_callbacks):
    requeued, failed = send(agent, lease_seconds=60), send(agent, lease_seconds=60, on_lost="fail")
    take(agent, requeued)
    take(agent, failed)
    before = parse(scrape())
    clock.tick(60)
    with django_capture_on_commit_callbacks(execute=True):
        get_task(actor=agent, task_id=requeued)  # a read settles both lapses
    with django_capture_on_commit_callbacks(execute=True):
        get_task(actor=agent, task_id=requeued)  # nothing more lapsed
    after = parse(scrape())
    for outcome in ("requeued", "failed"):
        assert moved(before, after, "commhub_lease_lapses_total", network=network.pk, outcome=outcome) == 1, outcome


def test_retries_and_dead_letters_count_when_they_happen(agent, network, clock, django_capture_on_commit_callbacks):
    net = network.pk
    task_id = send(agent, max_attempts=2, retry_backoff_seconds=10)
    take(agent, task_id)
    before = parse(scrape())

    with django_capture_on_commit_callbacks(execute=True):
        fail(agent, task_id)  # attempt 1 of 2 failed: held for an automatic retry
    middle = parse(scrape())
    clock.tick(20)
    with django_capture_on_commit_callbacks(execute=True):
        take(agent, task_id)  # released to the coder as attempt 2
    with django_capture_on_commit_callbacks(execute=True):
        fail(agent, task_id)  # the last attempt failed: dead-lettered
    with django_capture_on_commit_callbacks(execute=True):
        retry_task(actor=agent, task_id=task_id)  # a person sends it again
    after = parse(scrape())

    assert moved(before, middle, "commhub_task_retries_total", network=net, kind="automatic") == 1
    assert moved(before, middle, "commhub_dead_letters_total", network=net) == 0
    assert moved(middle, after, "commhub_task_retries_total", network=net, kind="automatic") == 0
    assert moved(middle, after, "commhub_dead_letters_total", network=net) == 1
    assert moved(middle, after, "commhub_task_retries_total", network=net, kind="manual") == 1
    assert Task.objects.get(pk=task_id).status == "delivered"


def test_a_rolled_back_write_counts_nothing(agent, network, django_capture_on_commit_callbacks):
    task_id = send(agent, max_attempts=1)
    retried = send(agent, max_attempts=3, retry_backoff_seconds=10)
    take(agent, retried)
    before = parse(scrape())

    class Undo(Exception):
        pass

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with pytest.raises(Undo), transaction.atomic():
            fail(agent, retried)  # would schedule an automatic retry
            take(agent, task_id)
            fail(agent, task_id)
            reply = retry_task(actor=agent, task_id=task_id)  # would count a manual retry
            assert reply["ok"] is True
            raise Undo
    after = parse(scrape())
    assert callbacks == []
    assert series(after, "commhub_task_retries_total") == series(before, "commhub_task_retries_total")
    assert Task.objects.get(pk=retried).status == "acked"


def test_rate_limit_refusals_count_writes_and_locked_logins(agent, settings, django_user_model):
    before = parse(scrape())
    settings.COMMHUB_WRITE_RATE_LIMIT = "2/minute"
    settings.COMMHUB_LOGIN_FAILURE_LIMIT = "2/minute"
    ratelimit.reset()
    send(agent)
    send(agent)
    for _ in range(3):
        with pytest.raises(HubError, match="Too many writes"):
            send(agent)
    django_user_model.objects.create_user("operator", password="right-password")
    for _ in range(2):
        assert authenticate(None, username="operator", password="wrong") is None
    with pytest.raises(HubError) as locked:
        authenticate(None, username="operator", password="right-password")
    assert locked.value.code == "login_locked"
    after = parse(scrape())
    assert moved(before, after, "commhub_rate_limit_refusals_total", limit="write") == 3
    assert moved(before, after, "commhub_rate_limit_refusals_total", limit="login") == 1


def histogram(before: Samples, after: Samples, via: str) -> tuple[float, float, float]:
    """How the dispatch-to-delivery histogram for `via` moved: (count, sum, count in the 2.5 s bucket)."""
    name = "commhub_dispatch_to_delivery_seconds"
    return (
        moved(before, after, f"{name}_count", via=via),
        moved(before, after, f"{name}_sum", via=via),
        moved(before, after, f"{name}_bucket", via=via, le="2.5"),
    )


def test_dispatch_to_delivery_is_observed_once_per_task_message_when_it_first_reaches_its_agent(
    agent, clock, django_capture_on_commit_callbacks
):
    before = parse(scrape())
    send(agent)
    send_task(actor=agent, alias=CODER, task="a plain message's kin", from_session=LEAD)
    clock.tick(2)
    with django_capture_on_commit_callbacks(execute=True):
        get_inbox(actor=agent, alias=CODER)  # both tasks reach the coder now: 2 s after dispatch
    with django_capture_on_commit_callbacks(execute=True):
        get_inbox(actor=agent, alias=CODER)  # handed out again: already delivered, not observed again
    acked_unread = send(agent, alias=REVIEWER)
    clock.tick(3)
    with django_capture_on_commit_callbacks(execute=True):
        # Acked by id before any read handed it out: the ack is its receipt, 3 s after dispatch.
        ack_inbox(actor=agent, alias=REVIEWER, message_id=acked_unread)
    after = parse(scrape())

    # approx: the sum is a float the process's earlier observations were added to (the difference of
    # two such sums is 4 only to within a rounding).
    assert histogram(before, after, "get_inbox") == pytest.approx((2, 4, 2))
    assert histogram(before, after, "ack_inbox") == pytest.approx((1, 3, 0))


# --- live connections, and requests -------------------------------------------------------------


def open_streams(transport: str) -> float:
    return value(parse(scrape()), "commhub_open_streams", transport=transport)


@pytest.mark.django_db(transaction=True)
def test_an_sse_stream_counts_while_it_is_open(network):
    from commhub.asgi import application

    _, token = token_create(network=network, role="member", name="streamer")
    before = open_streams("sse")

    async def stream() -> tuple[int, float, float]:
        request = scope(method="GET", path="/events/coder", authorization=f"Bearer {token}")
        talk = ApplicationCommunicator(application, request)
        await talk.send_input({"type": "http.request", "body": b"", "more_body": False})
        start = await talk.receive_output(10)
        await talk.receive_output(10)  # the first frame: the stream is open
        during = await sync_to_async(open_streams)("sse")
        await talk.send_input({"type": "http.disconnect"})
        await talk.wait(10)
        return start["status"], during, await sync_to_async(open_streams)("sse")

    status, during, after = async_to_sync(stream)()
    assert status == 200
    assert (during - before, after - before) == (1, 0)


@pytest.mark.django_db(transaction=True)
def test_a_dashboard_socket_counts_while_it_is_open(network, django_user_model):
    operator = django_user_model.objects.create_user("operator", password="x")
    membership_set(user=operator, network=network, role="viewer")
    headers = signed_in(operator)
    before = open_streams("websocket")

    async def talk() -> tuple[float, float]:
        socket = websocket(headers)
        connected, _ = await socket.connect()
        assert connected
        await socket.receive_json_from(timeout=10)  # hello
        during = await sync_to_async(open_streams)("websocket")
        await socket.disconnect()
        return during, await sync_to_async(open_streams)("websocket")

    during, after = async_to_sync(talk)()
    assert (during - before, after - before) == (1, 0)
    refused = websocket([])  # not signed in: closed before it is accepted, never counted

    async def refuse() -> bool:
        connected, _ = await refused.connect()
        return connected

    assert async_to_sync(refuse)() is False
    assert open_streams("websocket") == before


@pytest.mark.django_db(transaction=True)
def test_every_request_is_counted_by_route_and_status_agents_calls_included(network):
    from commhub.asgi import application

    _, token = token_create(network=network, role="member", name="counted")
    before = parse(scrape())

    async def calls() -> list[int]:
        return [
            (await ask(application, scope(method="GET", path="/healthz")))[0],
            # Served by commhub.lean, ahead of Django's middleware (ADR 0015).
            (await ask(application, scope(method="GET", path="/api/v1/sessions", authorization=f"Bearer {token}")))[0],
            (await ask(application, scope(method="GET", path="/api/v1/sessions", authorization="Bearer nope")))[0],
        ]

    assert async_to_sync(calls)() == [200, 200, 401]
    after = parse(scrape())
    assert moved(before, after, "commhub_http_requests_total", route="healthz", status="200") == 1
    assert moved(before, after, "commhub_http_requests_total", route="api", status="200") == 1
    assert moved(before, after, "commhub_http_requests_total", route="api", status="401") == 1
    assert moved(before, after, "commhub_http_request_duration_seconds_count", route="api") == 2


# --- the Grafana dashboard --------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_grafana_dashboard_uses_only_metrics_the_hub_exports():
    dashboard = json.loads(Path(DASHBOARD).read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    assert len(exprs) >= 10
    used = {name for expr in exprs for name in re.findall(r"\bcommhub_[a-z_]+", expr)}
    text = scrape()
    exported = {name for name, _ in parse(text)} | set(families(text))
    # A histogram's series (_bucket, _sum, _count) show only once observed; its family is enough.
    suffixes = {"histogram": ("_bucket", "_sum", "_count"), "counter": ("_total",)}
    exported |= {name + suffix for name, kind in families(text).items() for suffix in suffixes.get(kind, ())}
    assert used and used <= exported, sorted(used - exported)
    # And every family the hub exports is on the dashboard.
    assert {name for name in families(text) if name.startswith("commhub_")} <= {
        name.removesuffix("_total").removesuffix("_bucket").removesuffix("_count").removesuffix("_sum") for name in used
    }


@pytest.mark.slow  # starts Django in a subprocess
@pytest.mark.parametrize("directory", ["", "/nonexistent/commhub-metrics"])
def test_a_multiprocess_directory_that_is_not_one_stops_start_up(directory):
    # Set but empty, prometheus_client would write its files into the working directory.
    checked = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": directory},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode != 0
    assert "PROMETHEUS_MULTIPROC_DIR must name an existing directory" in checked.stderr
    assert not list(ROOT.glob("*_*.db"))
