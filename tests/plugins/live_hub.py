"""Live hubs for the whole suite: real daphne processes serving the test database.

Loaded by tests/conftest.py (`pytest_plugins`), so every package gets `hub_server` and `agent_http`
without importing another conftest. A test that uses `hub_server` is marked `live` by
tests/plugins/markers.py.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from hub_agents.services import token_create
from tests.helpers import ROOT
from tests.helpers.live import Agent, Hub, database_url


@pytest.fixture
def hub_server(transactional_db) -> Iterator[Callable[..., Hub]]:
    """start(env=None) → a daphne process on a free port serving the test database; stopped after the test."""
    started: list[Hub] = []

    def start(env: dict[str, str] | None = None, command: Callable[[int], list[str]] | None = None) -> Hub:
        """`env`: extra environment variables for this server (over the test process's own).
        `command(port)`: another server command line than this one (as make run or README start one)."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        log = Path(f"/tmp/commhub-hub-{os.getpid()}-{port}.log")
        env = {**os.environ, "DATABASE_URL": database_url(), "CONN_MAX_AGE": "0", **(env or {})}
        # daphne through commhub.serving, as `make run`: plain daphne would write its access lines, raw
        # tokens in query strings and all, into this log (and a failing test's output shows its tail).
        argv = [sys.executable, "-m", "commhub.serving", "-b", "127.0.0.1", "-p", str(port), "commhub.asgi:application"]
        process = subprocess.Popen(
            command(port) if command else argv,
            cwd=ROOT,
            env=env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        hub = Hub(url=f"http://127.0.0.1:{port}", process=process, log=log)
        started.append(hub)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            # Exited (e.g. another test run's server took the port first): not "started" because
            # something answers on its port.
            assert process.poll() is None, log.read_text()
            try:
                if httpx.get(f"{hub.url}/healthz", timeout=2).status_code == 200 and process.poll() is None:
                    return hub
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"hub did not start: {log.read_text()}")

    yield start
    for hub in started:
        hub.process.terminate()
        try:
            hub.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            hub.process.kill()
        log = hub.log.read_text(errors="replace")
        if "Traceback" in log:  # shown with the test's output if it failed: the server's side of it
            print(f"--- {hub.url} server log ---\n{log[-6000:]}")
        hub.log.unlink(missing_ok=True)


@pytest.fixture
def agent_http(network) -> Agent:
    _, raw = token_create(network=network, role="member", name="live-agent")
    return Agent(raw)
