"""1,000 concurrent get_inbox long-polls on one hub process: how soon each hears of its message,
and what the waiting costs that process in threads (/proc) and database connections
(pg_stat_activity, the backends whose client ports are that process's sockets).

The messages are sent through the service from this process (a thread of its own, at a steady
rate), so the figure is the waiting process's, not the send path's: from the send's commit to the
long-poll's answer at the client.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

import aiohttp
from django.db import connection

from bench import calls
from bench.load import Row
from bench.server import Server
from bench.setup import Fleet

WAITERS = 1_000
WAIT_SECONDS = 60  # get_inbox's longest wait: every message is sent well within it
RATE = 100  # messages a second
SETTLE_LIMIT = 60.0  # seconds for the waiters to park, at most
NAME = f"get_inbox wait_seconds={WAIT_SECONDS}: answer after its message ({WAITERS:,} waiters, 1 process)"


async def run(waiters: Server, fleet: Fleet) -> list[Row]:
    worker = waiters.pids()[-1]
    idle = _footprint(worker)
    answered: dict[int, float] = {}
    sent: dict[int, float] = {}
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=WAIT_SECONDS + 30)
    async with aiohttp.ClientSession(
        headers=calls.bearer(fleet.operator_token), connector=connector, timeout=timeout
    ) as session:

        async def wait(number: int) -> None:
            arguments = {"alias": f"lp-{number}", "wait_seconds": WAIT_SECONDS}
            try:
                result = await calls.tool(session, waiters.url, "get_inbox", arguments)
            except (TimeoutError, aiohttp.ClientError):
                return
            if result.get("messages"):
                answered[number] = time.perf_counter()

        polls = [asyncio.create_task(wait(n)) for n in range(WAITERS)]
        parked = await _settle(worker)
        waiting = _footprint(worker)
        done = sum(poll.done() for poll in polls)
        sender = threading.Thread(target=_send, args=(fleet.operator_token, sent), daemon=True)
        sender.start()
        during = waiting
        while sender.is_alive():
            await asyncio.sleep(1)
            during = tuple(max(a, b) for a, b in zip(during, _footprint(worker), strict=True))
        await asyncio.wait(polls, timeout=10)
        for poll in polls:
            poll.cancel()
    row = Row("longpoll", NAME, WAITERS)
    row.latencies = [max(0.0, answered[n] - sent[n]) for n in sent if n in answered]
    row.requests = len(sent)
    row.errors = len(sent) - len(row.latencies)  # never answered with their message
    row.facts = {
        "threads idle": idle[0],
        "connections idle": idle[1],
        "threads parked": waiting[0],
        "connections parked": waiting[1],
        "threads waiting": during[0],
        "connections waiting": during[1],
        "settle seconds": parked,
        "answered before any message": done,
    }
    row.note = (
        f"worker threads {idle[0]} idle, {waiting[0]} with all waiting, ≤ {during[0]} while answering; "
        f"its PostgreSQL connections {idle[1]}, {waiting[1]}, ≤ {during[1]}"
    )
    return [row]


async def _settle(worker: int) -> float:
    """Until the worker goes quiet: every long-poll has been read, checked and parked."""
    started = time.perf_counter()
    await asyncio.sleep(1)
    last = _cpu_seconds(worker)
    while time.perf_counter() - started < SETTLE_LIMIT:
        await asyncio.sleep(1)
        now = _cpu_seconds(worker)
        if now - last < 0.05:  # under 5 % of a core for a second
            break
        last = now
    return time.perf_counter() - started


def _send(operator_token: str, sent: dict[int, float]) -> None:
    """One task to each waiter, in the order they asked, at RATE a second (a thread: the ORM is sync)."""
    from hub_agents.services import token_authenticate
    from hub_tasks.services import task_send

    operator = token_authenticate(raw=operator_token)
    start = time.perf_counter()
    try:
        for number in range(WAITERS):
            time.sleep(max(0.0, start + number / RATE - time.perf_counter()))
            task_send(actor=operator, alias=f"lp-{number}", task=f"long-poll {number}")
            sent[number] = time.perf_counter()
    finally:
        connection.close()


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _footprint(pid: int) -> tuple[int, int]:
    """The process's threads, and the PostgreSQL backends serving its sockets."""
    status = Path(f"/proc/{pid}/status").read_text()
    threads = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("Threads:"))
    ports = _postgres_ports(pid)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE client_port = ANY(%s)", [list(ports)])
        (backends,) = cursor.fetchone()
    return threads, backends


def _postgres_ports(pid: int) -> set[int]:
    """Local ports of the process's TCP connections to port 5432."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, inode = fields[1], fields[2], fields[9]
            if inode in inodes and int(remote.rsplit(":", 1)[1], 16) == 5432:
                ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports
