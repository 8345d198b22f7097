"""Closed-loop HTTP load: N clients, each sending its next request as soon as the last answered."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

# One request of a scenario: given the session and the client's number, do the call and say
# whether it succeeded (an answer the caller would accept).
Call = Callable[[aiohttp.ClientSession, int], Awaitable[bool]]
SPAN = 3  # a cell's window is at least this many times as long as its clients' first round took


@dataclass
class Row:
    group: str
    name: str
    clients: int
    requests: int = 0
    errors: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list, repr=False)
    note: str = ""
    facts: dict[str, float] = field(default_factory=dict)  # figures besides rate and latency (bench.targets reads them)

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def percentile(self, share: float) -> float:
        """In milliseconds."""
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000


async def measure(
    group: str,
    name: str,
    call: Call,
    *,
    clients: int,
    seconds: float,
    warmup: float = 0.5,
    headers: dict[str, str] | None = None,
) -> Row:
    """Run `call` from `clients` concurrent clients and count what completes within a window of
    `seconds`: answers per second in steady state. The window opens after the warm-up, and not before
    every client has had one answer: clients start together, so with calls slower than the warm-up
    (the agent loop at 64 clients takes seconds) an earlier window would catch the first answers
    bunched, or none. For the same reason the window spans a few such calls at least. Answers after
    it closes are not counted, so slow calls' tails do not stretch it."""
    row = Row(group, name, clients, seconds=seconds)
    connector = aiohttp.TCPConnector(limit=clients, force_close=False)
    timeout = aiohttp.ClientTimeout(total=60)
    window: list[float] = []  # opens, closes
    answered = 0
    async with aiohttp.ClientSession(connector=connector, headers=headers, timeout=timeout) as session:
        started = time.perf_counter()

        async def client(number: int) -> None:
            nonlocal answered
            first = True
            while not window or time.perf_counter() < window[1]:
                began = time.perf_counter()
                try:
                    ok = await call(session, number)
                except (TimeoutError, aiohttp.ClientError, KeyError, ValueError):
                    ok = False
                done = time.perf_counter()
                if first:
                    first, answered = False, answered + 1
                    if answered == clients:
                        opens = max(done, started + warmup)
                        window[:] = [opens, opens + max(seconds, SPAN * (done - started))]
                        row.seconds = window[1] - window[0]
                if window and window[0] <= done <= window[1]:
                    row.requests += 1
                    row.latencies.append(done - began)
                    row.errors += not ok

        await asyncio.gather(*(client(n) for n in range(clients)))
    return row


async def post_json(session: aiohttp.ClientSession, url: str, body: Any) -> tuple[int, Any]:
    async with session.post(url, json=body) as reply:
        return reply.status, await reply.json(content_type=None)


async def get_json(session: aiohttp.ClientSession, url: str, params: dict[str, Any] | None = None) -> tuple[int, Any]:
    async with session.get(url, params=params) as reply:
        return reply.status, await reply.json(content_type=None)
