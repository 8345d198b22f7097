"""`bench/run`: the hub served as in production, on PostgreSQL + Redis, loaded over real HTTP.

Prints the measurements (MCP and REST throughput and latency at 1, 16 and 64 clients against
reference Django views, dispatch-to-delivery over SSE and the dashboard websocket, 1,000 long-polls
on one process, worker memory over a mixed run, latencies at 1M tasks, and the embedded default on
SQLite), then the Targets table: each target of issue 15 with its figure from this run, its bar,
and met or missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from bench import delivery, embedded, longpoll, rss, scale, search, setup, targets, throughput
from bench.load import Row
from bench.report import table
from bench.seed import seed
from bench.server import Server, asgi, limit_app, limit_env, start, wsgi

WORKERS = 2  # one per core
PHASES = ("throughput", "delivery", "rss", "longpoll", "scale", "search", "embedded")  # in the order they run
TIMES = """\
How long each part takes on 2 cores (full / --quick), besides ~30 s of start-up and seeding:
  throughput  17 cells x 3 client counts (--only targets: the 11 the targets read)
              at --seconds 3 (+0.5 s warm-up) each: ~3 min; targets only ~2 min; --quick ~1 min
  delivery    100 agents at 25 and 100 tasks/s, 8 s each, up to 30 s grace: 1-2 min;
              targets only / --quick: 100 tasks/s only (--quick 4 s): ~30 s
  rss         a mixed run of --rss-seconds: 600 s in a full run or --only rss,
              120 s with --only targets, 60 s with --quick
  longpoll    1,000 long-polls on one worker, 10 s of sends: ~30-60 s
  scale       preload of --tasks (1M: ~1-2 min; --quick 100k: ~10 s), then 7 reads: ~1-2 min
  search      preload of --tasks tasks and as many messages (1M: ~3 min), then 200 two-word queries: ~5 s
  embedded    SQLite + daphne: seeding ~30 s, the 11 target cells x 3: ~2 min (--quick ~1 min)
A full run takes about 20-25 minutes; --only targets about 10; --only targets --quick about 5."""


def main() -> None:
    args = _options()
    phases = set(PHASES) if not args.only or "targets" in args.only else set(args.only)
    full = not args.only or "targets" not in args.only  # every cell, not only those the targets read
    quick = args.quick
    seconds = args.seconds or (1.0 if quick else 3.0)
    tasks = args.tasks or (100_000 if quick else 1_000_000)
    rss_seconds = args.rss_seconds or (60.0 if quick else 600.0 if full else 120.0)

    print(f"commhub bench on {platform.node()}: {platform.processor() or platform.machine()}, {os.cpu_count()} cores")
    began = time.perf_counter()
    timings: dict[str, float] = {}
    rows: list[Row] = []
    memory = None
    servers: list[Server] = []
    try:
        setup.recreate_database()
        setup.django_setup()
        fleet = setup.fleet(agents=delivery.AGENTS)
        hub = _start(servers, "hub", asgi("commhub.asgi:application", workers=WORKERS), setup.SERVER_ENV)
        loaded = phases & {"throughput", "rss"}
        if loaded:
            # Before any event loop: services ring the doorbell from sync code.
            counts = throughput.CLIENTS if "throughput" in phases else ()
            seeds = seed(
                network_id=fleet.network_id, operator_token=fleet.operator_token, clients=counts, seconds=seconds
            )
        before = hub.rss_mb()
        if "throughput" in phases:
            echo = classic = None
            if full:
                echo = _start(servers, "echo", asgi("bench.echo:app", workers=WORKERS), {}, probe="/").url
                classic = _start(
                    servers, "wsgi", wsgi("commhub.wsgi:application", workers=WORKERS), setup.SERVER_ENV
                ).url
            # The reference app on the same database and serving, measured in the same run (issue 29).
            known = limit_env(database_url=setup.DATABASE_URL, token=fleet.operator_token, network_id=fleet.network_id)
            limit = _start(servers, "limit", limit_app(workers=WORKERS), known, probe="/").url
            rows += _timed(
                timings,
                "throughput",
                throughput.run(hub.url, seeds, seconds=seconds, full=full, echo=echo, classic=classic, limit=limit),
            )
        if "delivery" in phases:
            rates = delivery.RATES if full and not quick else (delivery.TARGET_RATE,)
            each = delivery.SECONDS / 2 if quick else delivery.SECONDS
            rows += _timed(timings, "delivery", delivery.run(hub, fleet, rates=rates, seconds=each))
        if "rss" in phases:
            rows += _timed(timings, "rss", rss.run(hub, seeds, seconds=rss_seconds))
        if loaded:
            memory = (before, hub.rss_mb())
        if "longpoll" in phases:
            waiters = _start(servers, "waiters", asgi("commhub.asgi:application", workers=1), setup.SERVER_ENV)
            rows += _timed(timings, "longpoll", longpoll.run(waiters, fleet))
        if "scale" in phases:
            started = time.perf_counter()
            rows += scale.run(hub, fleet, tasks=tasks)
            timings["scale"] = time.perf_counter() - started
        if "search" in phases:
            started = time.perf_counter()
            rows += search.run(rows=tasks)
            timings["search"] = time.perf_counter() - started
        if "embedded" in phases:
            started = time.perf_counter()
            local = embedded.serve()
            servers.append(local)
            sqlite_seeds = embedded.seed(clients=throughput.CLIENTS, seconds=seconds)
            rows += asyncio.run(embedded.run(local, sqlite_seeds, seconds=seconds))
            timings["embedded"] = time.perf_counter() - started
    finally:
        for server in servers:
            server.stop()
    took = ", ".join(f"{phase} {spent:.0f} s" for phase, spent in timings.items())
    text = "\n\n".join(
        [
            table(rows, memory=memory),
            "## Targets (issue 29; and those of issues 15 and 18 it keeps)\n\n" + targets.table(targets.evaluate(rows)),
            f"Wall time {time.perf_counter() - began:.0f} s ({took}); --seconds {seconds:g}, --tasks {tasks:,}"
            + (f", --rss-seconds {rss_seconds:g}" if "rss" in phases else "")
            + (", --quick" if quick else "")
            + (f", --only {' '.join(args.only)}" if args.only else ""),
        ]
    )
    print(text)
    if args.output:
        args.output.write_text(text + "\n")


def _options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/run", description=__doc__, epilog=TIMES, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, help="measured time of each throughput cell (default 3; --quick 1)")
    parser.add_argument(
        "--tasks", type=int, help="tasks preloaded for the scale phase (default 1,000,000; --quick 100,000)"
    )
    parser.add_argument(
        "--rss-seconds",
        type=float,
        help="the mixed run's length for worker memory (default 600 in a full run or --only rss, 120 with "
        "--only targets, 60 with --quick)",
    )
    parser.add_argument(
        "--only",
        choices=[*PHASES, "targets"],
        action="append",
        help="run only these parts (repeatable); `targets`: every part, but only the cells the Targets table reads",
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer seconds everywhere, 100k tasks: checks that it all runs"
    )
    parser.add_argument("--output", type=Path, help="also write the tables (markdown) to this file")
    return parser.parse_args()


def _start(servers: list[Server], name: str, command: list[str], env: dict[str, str], **probe: str) -> Server:
    server = start(name, command, env, **probe)
    servers.append(server)
    return server


def _timed(timings: dict[str, float], phase: str, work: Coroutine[Any, Any, list[Row]]) -> list[Row]:
    started = time.perf_counter()
    found = asyncio.run(work)
    timings[phase] = time.perf_counter() - started
    return found


if __name__ == "__main__":
    main()
