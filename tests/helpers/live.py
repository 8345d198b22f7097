"""Talking to live hubs (real daphne processes, see the `hub_server` fixture in tests/plugins/live_hub.py)
and to the companion (agent/) running against them."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import websockets
from django.db import connection
from django.test import Client

from hub_agents.models import Network
from hub_agents.services import membership_set
from hub_events.selectors import events_position
from tests.helpers import ROOT

AGENT_DIR = ROOT / "agent"
# An access line of a request answered 5xx (commhub.serving logs daphne's lines: '"GET /x HTTP/1.1" 500 12').
SERVER_ERROR = re.compile(r'" 5\d\d ')


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


def mcp_ok(hub: Hub, caller: Agent, tool: str, **arguments: Any) -> dict[str, Any]:
    """An agent's tool call over /mcp (Agent.mcp), which must succeed; its result object."""
    outcome = caller.mcp(hub, tool, **arguments)
    assert outcome["ok"], outcome
    return outcome


def assert_clean_log(hub: Hub) -> None:
    """The hub process logged no traceback and answered no request with a 5xx."""
    log = hub.log.read_text(errors="replace")
    assert "Traceback" not in log, log[-6000:]
    assert not SERVER_ERROR.search(log), [line for line in log.splitlines() if SERVER_ERROR.search(line)]


def healthy(hub: Hub) -> bool:
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


def restart_hub(hub: Hub) -> None:
    """Stop the hub process and start a new one on the same port (the same URL for the companion)."""
    hub_down(hub, kill=False)
    hub_up(hub)


def hub_down(hub: Hub, *, kill: bool = True) -> None:
    """Stop the hub: SIGKILL by default, so requests in flight lose their answers as in a real outage."""
    hub.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
    hub.process.wait(timeout=15)


def hub_up(hub: Hub) -> None:
    """Start the hub again on its port after hub_down."""
    port = hub.url.rsplit(":", 1)[1]
    hub.process = subprocess.Popen(
        [sys.executable, "-m", "commhub.serving", "--bind", "127.0.0.1", "--port", port, "commhub.asgi:application"],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url(), "CONN_MAX_AGE": "0"},
        stdout=hub.log.open("ab"),
        stderr=subprocess.STDOUT,
    )
    wait_for(lambda: healthy(hub), within=60, what="the restarted hub")


# --- the companion (agent/): a subprocess with the hub venv's python, agent/ on its PYTHONPATH ----


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


def rest(hub: Hub, agent: Agent, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    reply = httpx.request(method, f"{hub.url}/api/v1{path}", headers=agent.headers, timeout=30, **kwargs)
    assert reply.status_code < 500, reply.text
    return reply.json()


def journal(state_dir: Path, alias: str) -> list[dict[str, Any]]:
    path = state_dir / f"{alias}.runner.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def sent_reaches_socket_and_sse(
    sender: Hub, listener: Hub, agent: Agent, network: Network, user_model: Any, task: str
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """A task sent to "coder" through `sender` while an admin's dashboard socket and coder's SSE
    stream are open on `listener`: (send_task's answer, the socket's frame, the SSE frames)."""
    operator = user_model.objects.create_user("operator", password="x")
    membership_set(user=operator, network=network, role="admin")
    browser = Client()
    browser.force_login(operator)
    cookie = f"sessionid={browser.cookies['sessionid'].value}"
    start = events_position(network_id=network.id)
    sse_frames: list[dict[str, Any]] = []

    def listen_sse() -> None:
        for _, _, frame in sse_events(listener, agent, "coder", last_event_id=start, within=30):
            sse_frames.append(frame)
            return

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        ws_url = listener.url.replace("http", "ws") + "/ws/dashboard"
        async with websockets.connect(ws_url, origin=listener.url, additional_headers={"Cookie": cookie}) as socket:
            assert json.loads(await socket.recv())["type"] == "hello"
            sse = threading.Thread(target=listen_sse)
            sse.start()
            await asyncio.sleep(1)  # both clients are connected by now
            sent = await asyncio.to_thread(agent.send_task, sender, "coder", task)
            frame = json.loads(await asyncio.wait_for(socket.recv(), 10))
            await asyncio.to_thread(sse.join, 30)
            return sent, frame

    sent, frame = asyncio.run(run())
    return sent, frame, sse_frames
