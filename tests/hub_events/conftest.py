"""Live hubs for delivery tests: real daphne processes serving the test database."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.db import connection

from hub_agents.services import token_create

ROOT = Path(__file__).resolve().parents[2]


def database_url() -> str:
    """The URL of the database this test run uses, for server processes to share it."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    credentials = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{credentials}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@dataclass
class Hub:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def db_connection_count(self) -> int:
        """Connections this server process holds to the test database."""
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
                return cursor.fetchone()[0]
        target = os.path.realpath(connection.settings_dict["NAME"])
        fds = Path(f"/proc/{self.process.pid}/fd")
        return sum(1 for fd in fds.iterdir() if os.path.realpath(fd) == target)


@dataclass
class Agent:
    """A network token, and the calls an agent makes with it over HTTP."""

    token: str
    headers: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.headers = {"Authorization": f"Bearer {self.token}"}

    def send_task(self, hub: Hub, alias: str, task: str) -> dict[str, Any]:
        reply = httpx.post(f"{hub.url}/api/v1/tasks", json={"alias": alias, "task": task}, headers=self.headers)
        assert reply.status_code == 201, reply.text
        return reply.json()

    def inbox(self, hub: Hub, alias: str, **query: Any) -> dict[str, Any]:
        reply = httpx.get(f"{hub.url}/api/v1/sessions/{alias}/inbox", params=query, headers=self.headers, timeout=90)
        assert reply.status_code == 200, reply.text
        return reply.json()

    def mcp_inbox(self, hub: Hub, alias: str, **arguments: Any) -> dict[str, Any]:
        return self.mcp(hub, "get_inbox", alias=alias, **arguments)

    def mcp(self, hub: Hub, tool: str, *, client: httpx.Client | None = None, **arguments: Any) -> dict[str, Any]:
        """tools/call on /mcp; the tool's result object."""
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        reply = (client or httpx).post(f"{hub.url}/mcp", json=body, headers=self.headers, timeout=90)
        assert reply.status_code == 200, reply.text
        return json.loads(reply.json()["result"]["content"][0]["text"])


@pytest.fixture
def hub_server(transactional_db) -> Iterator[Callable[..., Hub]]:
    """start(env=None) → a daphne process on a free port serving the test database; stopped after the test."""
    started: list[Hub] = []

    def start(env: dict[str, str] | None = None, command: Callable[[int], list[str]] | None = None) -> Hub:
        """`env`: extra environment variables for this server (over the test process's own).
        `command(port)`: another server command line than plain daphne (as make run or README start one)."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        log = Path(f"/tmp/commhub-hub-{os.getpid()}-{port}.log")
        env = {**os.environ, "DATABASE_URL": database_url(), "CONN_MAX_AGE": "0", **(env or {})}
        argv = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "commhub.asgi:application"]
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
            try:
                if httpx.get(f"{hub.url}/healthz", timeout=2).status_code == 200:
                    return hub
            except httpx.TransportError:
                pass
            assert process.poll() is None, log.read_text()
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


def sse_events(hub: Hub, agent: Agent, alias: str, *, last_event_id: int | None = None, within: float = 60):
    """Yield (id, type, frame) from /events/{alias} until the caller stops; fail after `within` s."""
    deadline = time.monotonic() + within
    headers = dict(agent.headers)
    if last_event_id is not None:
        headers["Last-Event-ID"] = str(last_event_id)
    with httpx.stream("GET", f"{hub.url}/events/{alias}", headers=headers, timeout=30) as reply:
        assert reply.status_code == 200, reply.read()
        assert reply.headers["content-type"].startswith("text/event-stream")
        fields: dict[str, str] = {}
        for line in reply.iter_lines():
            assert time.monotonic() < deadline, "the stream kept alive but delivered nothing more"
            if line == "":
                if "data" in fields:
                    yield int(fields["id"]), fields["event"], json.loads(fields["data"])
                fields = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(": ")
                fields[name] = value
