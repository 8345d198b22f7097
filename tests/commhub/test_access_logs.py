"""No raw token in any line the servers print (issue 12, item 5).

Each test starts a server exactly as it is documented (`make run`'s daphne line, README's
Production gunicorn line), sends requests carrying a real token in the query string, the path,
headers and a websocket's query, stops the server and reads everything it printed.
"""

from __future__ import annotations

import re
import secrets
import shlex
import subprocess

import httpx
import pytest
import websockets.sync.client
from websockets.exceptions import InvalidStatus, WebSocketException

from hub_agents.services import token_create
from tests.helpers import ROOT
from tests.helpers.live import Hub


def make_run_command(port: int) -> list[str]:
    """The server line `make run` executes (make -n prints the recipe; setup is not re-run)."""
    recipe = subprocess.run(
        ["make", "-n", "-o", ".venv/.installed", "run", f"PORT={port}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (line,) = [line for line in recipe.splitlines() if line.startswith("exec ")]
    return shlex.split(line.removeprefix("exec "))


def production_command(port: int) -> list[str]:
    """README's Production gunicorn line, bound to a free local port instead of 0.0.0.0:8000."""
    section = (ROOT / "README.md").read_text().split("## Production", 1)[1]
    (line,) = [line for line in section.splitlines() if line.startswith(".venv/bin/gunicorn ")]
    assert "--bind 0.0.0.0:8000" in line
    return shlex.split(line.replace("--bind 0.0.0.0:8000", f"--bind 127.0.0.1:{port}"))


def stopped(hub: Hub) -> str:
    """Everything the server printed (stdout and stderr), once it has stopped."""
    hub.process.terminate()
    hub.process.wait(timeout=30)
    return hub.log.read_text(errors="replace")


def send_tokens_everywhere(url: str, token: str, headers: dict[str, str]) -> None:
    """Requests that carry the token where a server or Django might print it."""
    bearer = {**headers, "Authorization": f"Bearer {token}"}
    httpx.get(f"{url}/api/v1/tasks", params={"access_token": token}, headers=bearer)  # 400: unknown parameter
    encoded = token.replace("_", "%5F", 1)  # as some clients escape it
    httpx.get(f"{url}/api/v1/sessions?token={encoded}&x=1", headers=bearer)
    httpx.get(f"{url}/api/v1/nothing-here/{token}", headers=bearer)  # a 404 (Django logs its path)
    httpx.get(f"{url}/api/v1/tasks?access_token={token}", headers=headers)  # a 401
    leaky = {"Referer": f"{url}/?access_token={token}", "User-Agent": f"agent {token}", "X-Token": token}
    httpx.get(f"{url}/healthz", headers={**headers, **leaky})
    with pytest.raises((InvalidStatus, WebSocketException, OSError)):
        ws = url.replace("http://", "ws://")
        with websockets.sync.client.connect(f"{ws}/ws/dashboard?access_token={token}", open_timeout=10) as socket:
            socket.recv(timeout=5)  # refused (no session); if it were accepted, it closes


def assert_no_raw_token(output: str, token: str) -> None:
    secret = token.split("_", 1)[1]
    leaking = [line for line in output.splitlines() if secret in line or secret[:12] in line]
    assert not leaking, "\n".join(leaking)


def test_make_run_logs_requests_without_raw_tokens(hub_server, network):
    _, token = token_create(network=network, role="member", name="access-log")
    hub = hub_server(command=make_run_command)

    send_tokens_everywhere(hub.url, token, {})
    output = stopped(hub)

    assert_no_raw_token(output, token)
    # Still an access log: the request line is there, with the token redacted.
    assert re.search(r'"GET /api/v1/tasks\?access_token=ntok_\[redacted\]" 400', output), output
    assert "/api/v1/nothing-here/ntok_[redacted]" in output


def test_the_production_command_logs_requests_without_raw_tokens(hub_server, network):
    _, token = token_create(network=network, role="member", name="access-log")
    production = {
        "COMMHUB_PROFILE": "production",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        "COMMHUB_BEHIND_TLS_PROXY": "true",
    }
    hub = hub_server(production, command=production_command)

    send_tokens_everywhere(hub.url, token, {"X-Forwarded-Proto": "https"})  # as the TLS proxy would
    httpx.get(f"{hub.url}/api/v1/tasks?access_token={token}")  # plain HTTP: redirected, logged too
    output = stopped(hub)

    assert_no_raw_token(output, token)
    assert re.search(r'"GET /api/v1/tasks\?access_token=ntok_\[redacted\] HTTP/1.1" 400', output), output
    assert re.search(r'"GET /api/v1/tasks\?access_token=ntok_\[redacted\] HTTP/1.1" 301', output), output


def test_the_suites_own_live_hubs_log_requests_without_raw_tokens(hub_server, network):
    # The hub_server fixture's default command: its logs end up in failing tests' output and in /tmp.
    _, token = token_create(network=network, role="member", name="access-log")
    hub = hub_server()

    send_tokens_everywhere(hub.url, token, {})
    output = stopped(hub)

    assert_no_raw_token(output, token)
    assert re.search(r'"GET /api/v1/tasks\?access_token=ntok_\[redacted\]" 400', output), output


def test_secrets_in_query_values_and_the_metrics_token_are_logged_redacted(hub_server):
    """A metrics token sent as ?token= is refused (only the Authorization header counts) and must not
    reach the access log either, whatever its shape: query values named token, secret or key are
    redacted, and so is the configured metrics token wherever it appears."""
    metrics_token = "scrape-" + secrets.token_hex(16)  # no ntok_/utok_ prefix: the token pattern misses it
    other = secrets.token_hex(16)
    hub = hub_server({"COMMHUB_METRICS_TOKEN": metrics_token}, command=make_run_command)

    assert httpx.get(f"{hub.url}/metrics", params={"token": metrics_token}).status_code == 401
    httpx.get(f"{hub.url}/metrics?x=1&secret={other}a")
    httpx.get(f"{hub.url}/healthz?api_key={other}b&keep=visible")
    httpx.get(f"{hub.url}/healthz?Token={other}c")
    httpx.get(f"{hub.url}/api/v1/nothing-here/{metrics_token}")
    output = stopped(hub)

    leaking = [line for line in output.splitlines() if metrics_token in line or other in line]
    assert not leaking, "\n".join(leaking)
    assert re.search(r'"GET /metrics\?token=\[redacted\]" 401', output), output
    assert re.search(r'"GET /metrics\?x=1&secret=\[redacted\]" 401', output), output
    assert "/healthz?api_key=[redacted]&keep=visible" in output
    assert "/healthz?Token=[redacted]" in output
    assert "/api/v1/nothing-here/[redacted]" in output
