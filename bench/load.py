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
    """Run `call` from `clients` concurrent clients for `seconds` (after a warm-up not counted)."""
    row = Row(group, name, clients)
    connector = aiohttp.TCPConnector(limit=clients, force_close=False)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, headers=headers, timeout=timeout) as session:
        started = time.perf_counter()
        counting_from = started + warmup
        deadline = counting_from + seconds

        async def client(number: int) -> None:
            while (now := time.perf_counter()) < deadline:
                try:
                    ok = await call(session, number)
                except (TimeoutError, aiohttp.ClientError, KeyError, ValueError):
                    ok = False
                done = time.perf_counter()
                if now >= counting_from:
                    row.requests += 1
                    row.latencies.append(done - now)
                    row.errors += not ok

        await asyncio.gather(*(client(n) for n in range(clients)))
        row.seconds = time.perf_counter() - counting_from
    return row


async def post_json(session: aiohttp.ClientSession, url: str, body: Any) -> tuple[int, Any]:
    async with session.post(url, json=body) as reply:
        return reply.status, await reply.json(content_type=None)


async def get_json(session: aiohttp.ClientSession, url: str, params: dict[str, Any] | None = None) -> tuple[int, Any]:
    async with session.get(url, params=params) as reply:
        return reply.status, await reply.json(content_type=None)
