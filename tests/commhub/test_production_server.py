"""README's Production command, started as documented: one server for HTTP, SSE, long-poll and the
dashboard socket, on uvloop and httptools, restarted and stopped without cutting a request in flight
(issue 29 item 3; the access-log redaction on the same command: test_access_logs.py)."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.db import connection

from tests.commhub.test_access_logs import production_command
from tests.helpers.live import Agent, Hub, assert_clean_log, sent_reaches_socket_and_sse, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def production(hub_server, env: dict[str, str] | None = None) -> Hub:
    """README's line with 2 workers where they share PostgreSQL and Redis as in production, else 1
    (SQLite's test runs: no channel layer between processes)."""
    shared = connection.vendor == "postgresql" and bool(settings.REDIS_URL)

    def command(port: int) -> list[str]:
        argv = production_command(port)
        argv[argv.index("--workers") + 1] = "2" if shared else "1"
        return argv

    return hub_server(env, command=command)


def workers(hub: Hub) -> list[int]:
    children = Path(f"/proc/{hub.process.pid}/task/{hub.process.pid}/children")
    return [int(pid) for pid in children.read_text().split()]


def test_the_production_command_serves_http_sse_and_the_dashboard_socket(
    hub_server, agent_http, network, django_user_model
):
    hub = production(hub_server, {"COMMHUB_LOG_FORMAT": "json"})
    sent, socket_frame, sse_frames = sent_reaches_socket_and_sse(
        hub, hub, agent_http, network, django_user_model, "served in production"
    )
    task_id = sent["task_id"]
    assert (socket_frame["type"], socket_frame["payload"]["task_id"]) == ("new_task", task_id)
    assert [(frame["type"], frame["payload"]["task_id"]) for frame in sse_frames] == [("new_task", task_id)]
    assert [message["id"] for message in agent_http.inbox(hub, "coder")["messages"]] == [task_id]
    # The access line is logged within the request: under JSON logs it carries its id and caller.
    headers = {**agent_http.headers, "X-Request-ID": "production-1"}
    assert httpx.get(f"{hub.url}/api/v1/sessions/coder/inbox", headers=headers).status_code == 200
    access = wait_for(
        lambda: [
            line
            for line in map(json.loads, filter(None, hub.log.read_text().splitlines()))
            if line["logger"] == "uvicorn.access" and line["request_id"] == "production-1"
        ],
        within=10,
        what="the access line",
    )
    assert access[0]["actor"] and "/api/v1/sessions/coder/inbox" in access[0]["message"], access
    # Every worker on uvloop and httptools (commhub.serving.UvicornWorker), not uvicorn's silent fallback.
    for pid in workers(hub):
        maps = Path(f"/proc/{pid}/maps").read_text()
        assert "uvloop/loop." in maps and "httptools/parser/parser." in maps, pid
    assert_clean_log(hub)


def long_poll(hub: Hub, agent: Agent, answers: list[httpx.Response | Exception]) -> threading.Thread:
    def poll() -> None:
        try:
            answers.append(
                httpx.get(
                    f"{hub.url}/api/v1/sessions/waiter/inbox",  # nobody sends to it: the poll waits
                    params={"wait_seconds": 4},
                    headers=agent.headers,
                    timeout=60,
                )
            )
        except Exception as exc:  # the test reads it: a cut connection is the failure it looks for
            answers.append(exc)

    thread = threading.Thread(target=poll)
    thread.start()
    time.sleep(1.5)  # the request is in its worker by now
    return thread


def test_a_restart_and_a_stop_let_a_long_poll_in_flight_answer(hub_server, agent_http):
    hub = production(hub_server)
    before = set(workers(hub))

    # SIGHUP: gunicorn starts new workers and lets the old ones finish what they serve.
    answers: list[httpx.Response | Exception] = []
    poll = long_poll(hub, agent_http, answers)
    hub.process.send_signal(signal.SIGHUP)
    wait_for(
        lambda: set(workers(hub)).isdisjoint(before) and len(workers(hub)) == len(before), within=60, what="new workers"
    )
    poll.join(30)
    assert [getattr(answer, "status_code", answer) for answer in answers] == [200]
    assert answers[0].elapsed.total_seconds() > 3  # it waited its 4 s across the restart
    sent = agent_http.send_task(hub, "coder", "after the restart")  # the new workers serve
    assert [message["id"] for message in agent_http.inbox(hub, "coder")["messages"]] == [sent["task_id"]]

    # SIGTERM: no new request is taken, the one in flight is answered, then the server exits cleanly.
    answers.clear()
    poll = long_poll(hub, agent_http, answers)
    hub.process.send_signal(signal.SIGTERM)
    poll.join(30)
    assert [getattr(answer, "status_code", answer) for answer in answers] == [200]
    assert answers[0].elapsed.total_seconds() > 3
    assert hub.process.wait(timeout=30) == 0
    assert_clean_log(hub)
