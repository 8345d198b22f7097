"""The companion (agent/) against live hubs: it runs as a subprocess with the hub venv's python,
agent/ on its PYTHONPATH (CI also installs it alone into a fresh venv, see .ci/run)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hub_agents.services import token_create
from tests.hub_events.conftest import ROOT, Agent, Hub, database_url, hub_server  # noqa: F401

AGENT_DIR = ROOT / "agent"


@pytest.fixture
def live_hub(hub_server) -> Hub:  # noqa: F811
    # A rate-limit namespace of its own: token ids repeat across test runs sharing one Redis.
    return hub_server({"COMMHUB_RATE_LIMIT_PREFIX": f"agent-test-{uuid.uuid4().hex}"})


@pytest.fixture
def dispatcher(network) -> Agent:
    """Who sends the tasks (a token of its own, so the agent's writes are counted apart)."""
    return Agent(token_create(network=network, role="member", name="dispatcher")[1])


@pytest.fixture
def worker(network) -> Agent:
    """The token the companion runs with."""
    return Agent(token_create(network=network, role="member", name="companion")[1])


def companion_env(hub: Hub, agent: Agent, state_dir: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(AGENT_DIR),
        "COMMHUB_URL": hub.url,
        "COMMHUB_TOKEN": agent.token,
        "COMMHUB_AGENT_STATE_DIR": str(state_dir),
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


def companion_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "commhub_agent", *args]


def restart_hub(hub: Hub) -> None:
    """Stop the hub process and start a new one on the same port (the same URL for the companion)."""
    hub.process.send_signal(signal.SIGTERM)
    hub.process.wait(timeout=15)
    port = hub.url.rsplit(":", 1)[1]
    hub.process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", port, "commhub.asgi:application"],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url(), "CONN_MAX_AGE": "0"},
        stdout=hub.log.open("ab"),
        stderr=subprocess.STDOUT,
    )
    wait_for(lambda: _healthy(hub), within=60, what="the restarted hub")


def _healthy(hub: Hub) -> bool:
    try:
        return httpx.get(f"{hub.url}/healthz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def wait_for(condition: Callable[[], Any], *, within: float, what: str, every: float = 0.1) -> Any:
    deadline = time.monotonic() + within
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every)


def rest(hub: Hub, agent: Agent, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    reply = httpx.request(method, f"{hub.url}/api/v1{path}", headers=agent.headers, timeout=30, **kwargs)
    assert reply.status_code < 500, reply.text
    return reply.json()


@pytest.fixture
def state_dir(tmp_path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Companion processes a test starts; killed at the end whatever happened."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def journal(state_dir: Path, alias: str) -> list[dict[str, Any]]:
    path = state_dir / f"{alias}.runner.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
