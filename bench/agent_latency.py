"""Dispatch-to-notification latency of `commhub-agent channel`: from the moment a task is sent over
REST to the `notifications/claude/channel` the channel writes to its MCP client (as Claude Code
would read it), over 200 tasks sent at a steady rate. A benchmark, not a test: it prints figures.

    .venv/bin/python bench/agent_latency.py                 # SQLite in a temporary directory
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/commhub_bench_agent REDIS_URL=redis://127.0.0.1:6379/9 \\
        .venv/bin/python bench/agent_latency.py             # the production stack (database recreated)

The hub runs as production runs it (gunicorn with one uvicorn worker), the channel is spawned over
stdio by the official MCP client, as Claude Code spawns it.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp.client.client import Client
from mcp.client.extension import ClientExtension, NotificationBinding
from mcp.client.stdio import StdioServerParameters
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
ALIAS = "bench-claude"


class ChannelParams(BaseModel):
    content: str
    meta: dict[str, str]


class Arrivals(ClientExtension):
    identifier = "io.commhub.bench/channel"

    def __init__(self) -> None:
        self.at: dict[str, list[float]] = {}

    def notifications(self) -> list[NotificationBinding[Any]]:
        return [NotificationBinding(method="notifications/claude/channel", params_type=ChannelParams, handler=self._on)]

    async def _on(self, params: ChannelParams) -> None:
        self.at.setdefault(params.content, []).append(time.perf_counter())


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def prepare_database(env: dict[str, str]) -> None:
    url = env["DATABASE_URL"]
    if url.startswith("postgres"):
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{name}"')
    manage(env, "migrate", "--noinput")


def start_hub(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "commhub.asgi:application",
        "-k",
        "commhub.serving.UvicornWorker",  # production's (README, Production)
        "--workers",
        "1",
        "--bind",
        f"127.0.0.1:{port}",
    ]
    hub = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return hub, url
        except httpx.TransportError:
            time.sleep(0.2)
    hub.kill()
    raise SystemExit("the hub did not start")


async def measure(url: str, dispatcher: str, agent: str, state: str, tasks: int, rate: float) -> list[float]:
    arrivals = Arrivals()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "agent"),
        "COMMHUB_URL": url,
        "COMMHUB_TOKEN": agent,
        "COMMHUB_AGENT_STATE_DIR": state,
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "commhub_agent", "channel", "--alias", ALIAS], env=env
    )
    headers = {"Authorization": f"Bearer {dispatcher}"}
    sent: dict[str, float] = {}
    async with (
        Client(params, mode="legacy", extensions=[arrivals]) as _,
        httpx.AsyncClient(headers=headers, limits=httpx.Limits(keepalive_expiry=1.0)) as http,
    ):

        async def send(text: str) -> None:
            sent[text] = time.perf_counter()
            reply = await http.post(f"{url}/api/v1/tasks", json={"alias": ALIAS, "task": text}, timeout=30)
            assert reply.status_code == 201, reply.text

        # Until the channel follows the feed, a task could be sent before it listens.
        with anyio.fail_after(30):
            while "warm-up" not in arrivals.at:
                await send("warm-up")
                await anyio.sleep(0.5)
        async with anyio.create_task_group() as group:
            for n in range(tasks):
                group.start_soon(send, f"bench task {n}")
                await anyio.sleep(1 / rate)
        with anyio.move_on_after(30):
            while len([t for t in sent if t in arrivals.at]) < len(sent):
                await anyio.sleep(0.05)
    missing = [t for t in sent if t.startswith("bench") and t not in arrivals.at]
    twice = [t for t, times in arrivals.at.items() if t.startswith("bench") and len(times) > 1]
    if missing or twice:
        raise SystemExit(f"{len(missing)} tasks never arrived, {len(twice)} arrived twice")
    return [(arrivals.at[t][0] - sent[t]) * 1000 for t in sent if t.startswith("bench")]


@contextmanager
def bench_hub(network: str, alias: str) -> Iterator[tuple[str, str, str, str, str]]:
    """A hub served as in production on a fresh database (SQLite in a temporary folder unless
    DATABASE_URL says otherwise), with a dispatcher's token and the agent's: (url, dispatcher's
    token, agent's token, the temporary folder, which database)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "COMMHUB_WRITE_RATE_LIMIT": "off"}
        env.setdefault("DATABASE_URL", f"sqlite:///{tmp}/bench.sqlite3")
        prepare_database(env)
        manage(env, "create_network", network)
        dispatcher = manage(env, "create_token", "--network", network, "--name", "dispatcher")
        agent = manage(env, "create_token", "--network", network, "--name", alias)
        hub, url = start_hub(env)
        backend = "PostgreSQL + Redis" if env["DATABASE_URL"].startswith("postgres") else "SQLite"
        try:
            yield url, dispatcher, agent, tmp, backend
        finally:
            hub.terminate()
            hub.wait(timeout=15)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--tasks", type=int, default=200)
    options.add_argument("--rate", type=float, default=20.0, help="tasks sent a second (default 20)")
    args = options.parse_args()
    with bench_hub("bench-agent", ALIAS) as (url, dispatcher, agent, tmp, backend):
        latencies = anyio.run(measure, url, dispatcher, agent, f"{tmp}/state", args.tasks, args.rate)
    latencies.sort()
    p99 = latencies[max(0, int(len(latencies) * 0.99) - 1)]
    print(f"commhub-agent channel, dispatch → notifications/claude/channel ({backend}, gunicorn 1 uvicorn worker)")
    print(f"  tasks {len(latencies)} at {args.rate:g}/s, each arrived exactly once")
    print(f"  p50 {statistics.median(latencies):.1f} ms   p99 {p99:.1f} ms   max {latencies[-1]:.1f} ms")


if __name__ == "__main__":
    main()
