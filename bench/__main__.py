"""`bench/run`: the hub served as in production, on PostgreSQL + Redis, loaded over real HTTP.

Prints one table: MCP tools/call and REST throughput and latency at 1, 16 and 64 clients,
dispatch-to-delivery latency over SSE and the dashboard websocket, latencies at scale (1M tasks),
and the reference points every figure is compared with.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
from collections.abc import Iterator
from pathlib import Path

from bench import calls, delivery, scale, setup
from bench.load import Row, measure
from bench.report import table
from bench.server import Server, asgi, start, wsgi

CLIENTS = (1, 16, 64)
WORKERS = 2  # one per core


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench/run", description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="measured time of each throughput cell")
    parser.add_argument("--tasks", type=int, default=1_000_000, help="tasks preloaded for the scale phase")
    parser.add_argument("--only", choices=["throughput", "delivery", "scale"], action="append")
    parser.add_argument("--output", type=Path, help="also write the table (markdown) to this file")
    args = parser.parse_args()
    phases = set(args.only or ["throughput", "delivery", "scale"])

    print(f"commhub bench on {platform.node()}: {platform.processor() or platform.machine()}, {os.cpu_count()} cores")
    setup.recreate_database()
    setup.django_setup()
    fleet = setup.fleet(agents=100)
    hub = start("hub", asgi("commhub.asgi:application", workers=WORKERS), setup.SERVER_ENV)
    echo = start("echo", asgi("bench.echo:app", workers=WORKERS), {}, probe="/")
    classic = start("wsgi", wsgi("commhub.wsgi:application", workers=WORKERS), setup.SERVER_ENV)
    rows: list[Row] = []
    try:
        memory_before = hub.rss_mb()
        if "throughput" in phases:
            task_ids = _seed(fleet)  # before the event loop: services ring the doorbell from sync code
            rows += asyncio.run(throughput(hub, echo, classic, fleet, task_ids, args.seconds))
        if "delivery" in phases:
            rows += asyncio.run(delivery.run(hub, fleet))
        memory_after = hub.rss_mb()
        if "scale" in phases:
            rows += scale.run(hub, fleet, tasks=args.tasks)
    finally:
        for server in (hub, echo, classic):
            server.stop()
    text = table(rows, memory=(memory_before, memory_after))
    print(text)
    if args.output:
        args.output.write_text(text)


async def throughput(
    hub: Server, echo: Server, classic: Server, fleet: setup.Fleet, task_ids: list[str], seconds: float
) -> list[Row]:
    url, headers = hub.url, calls.bearer(fleet.operator_token)
    rows = []
    for clients in CLIENTS:
        pending = _seed_acks(fleet, clients, per_client=max(4000 // clients, 200))
        cells = [
            ("reference", "raw ASGI echo", calls.plain(echo.url, "/", post=True)),
            ("reference", "Django view: INSERT+SELECT", calls.plain(url, "/bench/insert", post=True)),
            ("reference", "Django view: SELECT", calls.plain(url, "/bench/select", post=False)),
            ("mcp", "send_task", calls.mcp(url, "send_task", lambda n: {"alias": f"load-{n}", "task": "bench"})),
            ("mcp", "get_inbox", calls.mcp(url, "get_inbox", lambda n: {"alias": f"inbox-{n}"})),
            ("mcp", "ack_inbox", calls.acks(url, pending, "ack")),
            ("mcp", "report_status", calls.mcp(url, "report_status", _heartbeat)),
            ("mcp", "report_completion", calls.mcp(url, "report_completion", _completion)),
            ("mcp", "get_task", calls.mcp(url, "get_task", calls.any_of(task_ids))),
            ("mcp", "list_tasks", calls.mcp(url, "list_tasks", lambda n: {})),
            ("mcp", "agent loop (5 calls)", calls.agent_loop(url)),
            ("rest", "POST /api/v1/tasks", calls.rest_send(url)),
            ("rest", "GET /api/v1/sessions/{alias}/inbox", calls.rest_inbox(url)),
            # The classic deployment, to choose the serving setup from measurements.
            ("wsgi", "Django view: INSERT+SELECT", calls.plain(classic.url, "/bench/insert", post=True)),
            ("wsgi", "Django view: SELECT", calls.plain(classic.url, "/bench/select", post=False)),
            ("wsgi", "send_task", calls.mcp(classic.url, "send_task", lambda n: {"alias": f"w-{n}", "task": "x"})),
            ("wsgi", "get_task", calls.mcp(classic.url, "get_task", calls.any_of(task_ids))),
        ]
        for group, name, call in cells:
            rows.append(await measure(group, name, call, clients=clients, seconds=seconds, headers=headers))
    return rows


def _heartbeat(client: int) -> dict[str, str]:
    return {"alias": f"status-{client}", "resume_id": f"status-resume-{client}", "status": "working"}


def _completion(client: int) -> dict[str, object]:
    return {"alias": f"done-{client}", "task": "work nobody sent", "result": "done", "score": 7}


def _seed(fleet: setup.Fleet) -> list[str]:
    """Tasks for get_inbox, get_task and the agent loops (5 in each inbox-N, 40 in each mix-N),
    sent through the service layer in this process: seconds, where tool calls would take minutes."""
    from hub_agents.services import token_authenticate
    from hub_tasks.services import task_send

    operator = token_authenticate(raw=fleet.operator_token)
    targets = [f"inbox-{n}" for n in range(64) for _ in range(5)] + [f"mix-{n}" for n in range(64) for _ in range(40)]
    return [task_send(actor=operator, alias=alias, task=f"seeded for {alias}")["task_id"] for alias in targets]


def _seed_acks(fleet: setup.Fleet, clients: int, *, per_client: int) -> dict[int, Iterator[str]]:
    """Messages for ack_inbox, written straight to the table: each client acks its own."""
    from hub_tasks.models import InboxMessage

    rows = [
        InboxMessage(
            network_id=fleet.network_id,
            to_alias=f"ack-{client}",
            type="message",
            content="ack me",
            from_session="bench",
        )
        for client in range(clients)
        for _ in range(per_client)
    ]
    InboxMessage.objects.bulk_create(rows, batch_size=2000)
    ids: dict[int, list[str]] = {}
    for row in rows:
        ids.setdefault(int(row.to_alias.removeprefix("ack-")), []).append(row.id)
    return {client: iter(found) for client, found in ids.items()}


if __name__ == "__main__":
    main()
