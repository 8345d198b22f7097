"""COMMHUB_LOG_FORMAT=json (issue 19, logs): one JSON object a line, each carrying the request's id
(the one its response's X-Request-ID names), its caller's label and its network; no raw token in
any line; text mode as before.

The in-process tests send requests to the hub's own ASGI application (the fast path for agents'
calls, Django's handler for the dashboard) with the console handler that JSON mode configures; the
live test starts a hub with COMMHUB_LOG_FORMAT=json and reads everything it printed.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import runpy
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from asgiref.testing import ApplicationCommunicator
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone
from django.utils.module_loading import import_string

from commhub.asgi import application
from hub_agents.models import Network
from hub_agents.services import membership_set, token_authenticate, token_create, user_get_or_create
from hub_core import ratelimit
from hub_tasks.models import Task
from hub_webhooks.services import webhook_create
from tests.helpers import ROOT
from tests.helpers.asgi import Answer, ask, scope
from tests.helpers.calls import send_task
from tests.helpers.dashboard import browser_of, signed_in
from tests.helpers.live import database_url
from tests.helpers.webhooks import Receiver

pytestmark = pytest.mark.django_db(transaction=True)  # the fast path's database work runs on pool threads

Lines = Callable[[], list[dict[str, Any]]]
GENERATED = re.compile(r"[0-9a-f]{32}")


def settings_under(monkeypatch: pytest.MonkeyPatch, **env: str) -> dict[str, Any]:
    """commhub/settings.py evaluated afresh with these environment variables."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(ROOT / "commhub" / "settings.py"))


@pytest.fixture
def json_lines(monkeypatch) -> Iterator[Lines]:
    """The console handler as COMMHUB_LOG_FORMAT=json configures it (its filter and formatter), on
    the root logger for the test: lines() parses everything it wrote."""
    logging_config = settings_under(monkeypatch, COMMHUB_LOG_FORMAT="json")["LOGGING"]
    console = logging_config["handlers"]["console"]
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    for name in console["filters"]:
        handler.addFilter(import_string(logging_config["filters"][name]["()"])())
    handler.setFormatter(import_string(logging_config["formatters"][console["formatter"]]["()"])())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        root.removeHandler(handler)


@pytest.fixture
def storage_down(settings) -> None:
    """Every write logs a warning with its traceback, from inside the call (the write limit's storage
    is unreachable: hub_tools.ratelimit lets the write through and says so)."""
    settings.COMMHUB_RATE_LIMIT_STORAGE = "redis://127.0.0.1:1/0"
    ratelimit.reset()


@pytest.fixture
def ci_runner(network) -> tuple[str, str]:
    """A network token: (its raw value, its actor's label)."""
    token, raw = token_create(network=network, role="member", name="ci-runner")
    return raw, f"{token.prefix} (ci-runner)"


def call(request: dict[str, Any], body: Any = b"") -> Answer:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = {**request, "headers": [*request["headers"], (b"content-length", str(len(raw)).encode())]}
    return asyncio.run(ask(application, request, raw))


def of_request(lines: list[dict[str, Any]], request_id: str) -> list[dict[str, Any]]:
    found = [line for line in lines if line["request_id"] == request_id]
    assert found, lines
    return found


def test_a_rest_call_logs_its_request_id_caller_and_network(json_lines, storage_down, ci_runner, network):
    raw, label = ci_runner
    status, headers, _ = call(
        scope(path="/api/v1/tasks", authorization=f"Bearer {raw}"), {"alias": "coder", "task": "build it"}
    )

    assert status == 201
    (line,) = of_request(json_lines(), headers["x-request-id"])
    assert GENERATED.fullmatch(headers["x-request-id"])
    assert (line["logger"], line["level"]) == ("hub_tools.ratelimit", "WARNING")
    assert line["message"] == "rate limit storage unavailable; letting the write through"
    assert (line["actor"], line["network"]) == (label, network.pk)
    assert "Traceback" in line["exception"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line["time"])


def test_an_mcp_tools_call_on_the_fast_path_logs_its_request_id_caller_and_network(
    json_lines, storage_down, ci_runner, network
):
    raw, label = ci_runner
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "send_task", "arguments": {"alias": "coder", "task": "build it"}},
    }
    status, headers, body = call(scope(authorization=f"Bearer {raw}", x_request_id="ci-42.build:7"), message)

    assert status == 200, body
    assert headers["x-request-id"] == "ci-42.build:7"  # a sane id is kept
    (line,) = of_request(json_lines(), "ci-42.build:7")
    assert line["logger"] == "hub_tools.ratelimit"
    assert (line["actor"], line["network"]) == (label, network.pk)


def test_a_dashboard_page_logs_its_request_id_caller_and_network(json_lines, network):
    alice = user_get_or_create(username="alice")
    membership_set(user=alice, network=network, role="owner")
    cookie = browser_of(alice).cookies[django_settings.SESSION_COOKIE_NAME].value

    status, headers, _ = call(
        scope(method="GET", path="/tasks/no-such-task/", cookie=f"{django_settings.SESSION_COOKIE_NAME}={cookie}")
    )

    assert status == 404
    (line,) = of_request(json_lines(), headers["x-request-id"])
    assert (line["logger"], line["message"]) == ("django.request", "Not Found: /tasks/no-such-task/")
    assert (line["actor"], line["network"]) == ("user:alice", network.pk)
    assert line["status_code"] == 404  # an extra field of the record


def test_a_caller_of_several_networks_is_logged_in_the_network_its_call_names(json_lines, storage_down, network):
    other = Network.objects.create(name="beta")
    bob = user_get_or_create(username="bob")
    for each in (network, other):
        membership_set(user=bob, network=each, role="member")
    _, raw = token_create(user=bob)

    status, headers, _ = call(
        scope(path="/api/v1/tasks", authorization=f"Bearer {raw}"),
        {"alias": "coder", "task": "build it", "network_id": other.pk},
    )

    assert status == 201
    (line,) = of_request(json_lines(), headers["x-request-id"])
    assert (line["actor"], line["network"]) == ("user:bob", other.pk)


@pytest.mark.parametrize(
    "supplied",
    ["has spaces", "x" * 129, "semi;colon", 'quote"d', "ntok_AbCdEfGhIjKlMnOp", ""],
)
def test_an_insane_request_id_is_replaced(json_lines, ci_runner, supplied):
    raw, _ = ci_runner
    status, headers, _ = call(
        scope(method="GET", path="/api/v1/nothing", authorization=f"Bearer {raw}", x_request_id=supplied)
    )

    assert status == 404
    assert GENERATED.fullmatch(headers["x-request-id"])


def test_a_websocket_handshake_echoes_its_request_id(network):
    alice = user_get_or_create(username="alice")
    membership_set(user=alice, network=network, role="owner")

    talk = ApplicationCommunicator(
        application,
        {
            "type": "websocket",
            "path": "/ws/dashboard",
            "query_string": b"",
            "headers": [(b"host", b"127.0.0.1"), *signed_in(alice), (b"x-request-id", b"ws-7")],
            "subprotocols": [],
        },
    )

    async def accept() -> dict[str, Any]:
        await talk.send_input({"type": "websocket.connect"})
        answer = await talk.receive_output(10)
        await talk.send_input({"type": "websocket.disconnect", "code": 1000})
        await talk.wait(10)
        return answer

    answer = asyncio.run(accept())
    assert answer["type"] == "websocket.accept"
    assert (b"x-request-id", b"ws-7") in answer["headers"]


def test_no_raw_token_in_a_line_its_message_extras_or_traceback(json_lines, ci_runner):
    raw, _ = ci_runner
    try:
        raise ValueError(f"refused {raw}")
    except ValueError:
        logging.getLogger("commhub.test").warning(
            "seen %s", raw, exc_info=True, extra={"authorization": f"Bearer {raw}", "seen": {"token": raw}}
        )

    (line,) = [line for line in json_lines() if line["logger"] == "commhub.test"]
    assert raw.split("_", 1)[1] not in json.dumps(line)
    assert line["message"] == "seen ntok_[redacted]"
    assert line["authorization"] == "Bearer ntok_[redacted]"
    assert "ValueError: refused ntok_[redacted]" in line["exception"]
    assert (line["request_id"], line["actor"], line["network"]) == (None, None, None)  # outside any request


def test_text_is_the_default_as_before_and_json_differs_only_in_its_formatter(monkeypatch):
    monkeypatch.delenv("COMMHUB_LOG_FORMAT", raising=False)
    text = settings_under(monkeypatch)["LOGGING"]
    json_mode = settings_under(monkeypatch, COMMHUB_LOG_FORMAT="json")["LOGGING"]

    # Text: the console handler as it always was (the default formatter: the message alone).
    assert text["handlers"]["console"] == {"class": "logging.StreamHandler", "filters": ["redact_tokens"]}
    assert json_mode["handlers"]["console"] == {**text["handlers"]["console"], "formatter": "json"}
    assert {**json_mode, "handlers": text["handlers"]} == text


def test_a_bad_log_format_stops_start_up_naming_it(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match='COMMHUB_LOG_FORMAT must be "text" or "json", got \'xml\''):
        settings_under(monkeypatch, COMMHUB_LOG_FORMAT="xml")


def test_a_live_hub_logs_json_lines_with_the_request_id_of_each_response(hub_server, ci_runner, network):
    raw, label = ci_runner
    alice = user_get_or_create(username="alice")
    membership_set(user=alice, network=network, role="owner")
    cookie = browser_of(alice).cookies[django_settings.SESSION_COOKIE_NAME].value
    hub = hub_server({"COMMHUB_LOG_FORMAT": "json"})
    bearer = {"Authorization": f"Bearer {raw}"}

    rest = httpx.post(f"{hub.url}/api/v1/tasks", json={"alias": "coder", "task": "t"}, headers=bearer)
    mcp = httpx.post(
        f"{hub.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_all_status", "arguments": {}}},
        headers={**bearer, "X-Request-ID": "trace-1", "Accept": "application/json, text/event-stream"},
    )
    leaky = httpx.get(f"{hub.url}/api/v1/tasks", params={"access_token": raw}, headers={"X-Request-ID": raw})
    page = httpx.get(
        f"{hub.url}/fleet/", cookies={django_settings.SESSION_COOKIE_NAME: cookie}, headers={"X-Request-ID": "a b"}
    )
    hub.process.terminate()
    hub.process.wait(timeout=30)
    output = hub.log.read_text(errors="replace")

    assert (rest.status_code, mcp.status_code, leaky.status_code, page.status_code) == (201, 200, 401, 200)
    secret = raw.split("_", 1)[1]
    assert secret not in output and secret[:12] not in output
    printed = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert printed and len(printed) == len([line for line in output.splitlines() if line.strip()]), output
    assert mcp.headers["x-request-id"] == "trace-1"
    assert GENERATED.fullmatch(page.headers["x-request-id"]) and GENERATED.fullmatch(leaky.headers["x-request-id"])
    for response, actor in [(rest, label), (mcp, label), (page, "user:alice")]:
        lines = [line for line in printed if line["request_id"] == response.headers["x-request-id"]]
        (access,) = [line for line in lines if line["logger"] == "daphne.access"]  # the server's own line
        assert (access["actor"], access["network"]) == (actor, network.pk), access
    refused = {line["logger"]: line for line in printed if line["request_id"] == leaky.headers["x-request-id"]}
    assert refused["django.request"]["message"] == "Unauthorized: /api/v1/tasks"
    assert "access_token=ntok_[redacted]" in refused["daphne.access"]["message"]
    assert all(line["actor"] is None for line in refused.values())
    starting = [line for line in printed if line["logger"] == "daphne.cli"]
    assert starting and all(line["request_id"] is None for line in starting)  # the server's own: no request's


def printed_by(command: list[str], returncode: int = 0, **env: str) -> list[str]:
    """Every line `manage.py <command>` prints (stdout and stderr), run on the test database."""
    ran = subprocess.run(
        [sys.executable, "manage.py", *command],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url(), "CONN_MAX_AGE": "0", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == returncode, ran.stdout + ran.stderr
    return [line for line in (ran.stdout + ran.stderr).splitlines() if line.strip()]


def assert_json_lines(lines: list[str], says: str) -> None:
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"not a JSON line: {line!r}\nall lines: {lines}") from None
    assert all(isinstance(line, dict) and {"time", "level", "logger", "message"} <= set(line) for line in parsed)
    assert any(says in line["message"] for line in parsed), lines


@pytest.mark.slow  # four processes of their own: seconds
def test_the_sweep_and_the_deliverer_print_only_json_lines(network, ci_runner, make_actor, settings):
    """README: under COMMHUB_LOG_FORMAT=json every line the hub prints is one JSON object; its
    workers (`make run` starts both) report what they did, and that line is JSON too."""
    agent = token_authenticate(raw=ci_runner[0])
    task_id = send_task(actor=agent, alias="coder", task="expires unseen", ttl_seconds=60)["task_id"]
    Task.objects.filter(pk=task_id).update(expires_at=timezone.now() - timedelta(seconds=1))
    settings.COMMHUB_WEBHOOKS_ALLOW_PRIVATE = True
    receiver = Receiver()
    try:
        webhook_create(actor=make_actor(network, "owner"), network_id=network.pk, url=receiver.url, event_types=[])
        send_task(actor=agent, alias="coder", task="an event to deliver")
        json_mode = {"COMMHUB_LOG_FORMAT": "json", "COMMHUB_WEBHOOKS_ALLOW_PRIVATE": "true"}

        assert_json_lines(printed_by(["sweep", "--once"], **json_mode), "settled 1 tasks")
        assert_json_lines(printed_by(["webhooks", "--once", "-v", "2"], **json_mode), "delivered ")
        assert_json_lines(printed_by(["sweep", "--interval", "0"], 2, **json_mode), "--interval must be")
        assert_json_lines(printed_by(["webhooks", "--interval", "0"], 2, **json_mode), "must be more than 0")
    finally:
        receiver.stop()
    assert Task.objects.get(pk=task_id).status == "expired"
