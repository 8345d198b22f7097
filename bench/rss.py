"""Worker memory over a mixed run: 16 clients cycling through reads and writes for a while,
each worker's RSS sampled from /proc. Growth is taken from the end of the warm-up to the end."""

from __future__ import annotations

import asyncio
import itertools
import time

import aiohttp

from bench import calls, throughput
from bench.load import Call, Row, measure
from bench.seed import Seeds
from bench.server import Server

CLIENTS = 16
SAMPLE_EVERY = 5.0  # seconds
WARMUP_SHARE, WARMUP_MAX = 0.2, 60.0  # the warm-up: a fifth of the run, a minute at most


def warmup(seconds: float) -> float:
    return min(WARMUP_MAX, seconds * WARMUP_SHARE)


def mixed(url: str, seeds: Seeds) -> Call:
    """Each client's next request is the next kind in turn: writes and reads, MCP and REST."""
    kinds = [
        calls.mcp(url, "send_task", lambda n: {"alias": f"rss-{n}", "task": "mixed"}),
        calls.mcp(url, "get_inbox", lambda n: {"alias": f"inbox-{n}"}),
        calls.mcp(url, "get_task", calls.any_of(seeds.task_ids)),
        calls.mcp(url, "report_status", throughput.heartbeat),
        calls.mcp(url, "report_completion", throughput.completion),
        calls.mcp(url, "list_tasks", lambda n: {"alias": f"rss-{n}"}),
        calls.mcp(url, "get_all_status", lambda n: {}),
        calls.rest_send(url),
        calls.rest_inbox(url),
    ]
    turns = itertools.count()

    async def call(session: aiohttp.ClientSession, client: int) -> bool:
        return await kinds[next(turns) % len(kinds)](session, client)

    return call


async def run(hub: Server, seeds: Seeds, *, seconds: float) -> list[Row]:
    samples: list[tuple[float, dict[int, float]]] = []
    started = time.perf_counter()

    async def sample() -> None:
        while time.perf_counter() - started < seconds:
            samples.append((time.perf_counter() - started, hub.worker_rss()))
            await asyncio.sleep(SAMPLE_EVERY)

    load = measure(
        "memory",
        "mixed run, worker RSS",
        mixed(hub.url, seeds),
        clients=CLIENTS,
        seconds=seconds,
        warmup=0.0,
        headers=calls.bearer(seeds.operator_token),
    )
    row, _ = await asyncio.gather(load, sample())
    samples.append((time.perf_counter() - started, hub.worker_rss()))
    settled = next((rss for at, rss in samples if at >= warmup(seconds)), samples[-1][1])
    final = samples[-1][1]
    growth = [(final[pid] - mb) / mb * 100 for pid, mb in settled.items() if pid in final]
    row.facts = {"seconds": seconds, "warmup": warmup(seconds), "growth %": max(growth, default=float("nan"))}
    row.note = f"{seconds:.0f} s; RSS MB after a {warmup(seconds):.0f} s warm-up → at the end: " + ", ".join(
        f"{mb:.0f} → {final[pid]:.0f} ({(final[pid] - mb) / mb * 100:+.1f} %)"
        for pid, mb in settled.items()
        if pid in final
    )
    return [row]
