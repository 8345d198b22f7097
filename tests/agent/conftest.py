"""The companion (agent/) against live hubs: it runs as a subprocess with the hub venv's python,
agent/ on its PYTHONPATH (CI also installs it alone into a fresh venv, see .ci/run)."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hub_agents.services import token_create
from tests.helpers.live import Agent, Hub


@pytest.fixture
def live_hub(hub_server) -> Hub:
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
