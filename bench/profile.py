"""`python -m bench.profile send_task|get_inbox|get_task [--gil]`: where one worker's time goes under 16 clients.

Starts one hub worker on the benchmark database, loads one tool for 10 s, records the worker with
py-spy for 8 s (with --gil, only while it holds the GIL) and prints the functions that hold the most
samples.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections import Counter
from pathlib import Path

import aiohttp

from bench import calls, setup
from bench.load import measure
from bench.server import LOGS, asgi, start

ARGUMENTS = {
    "send_task": lambda n: {"alias": f"profile-{n}", "task": "profiled"},
    "get_inbox": lambda n: {"alias": f"profile-{n}"},
}
IDLE = ("_worker (concurrent/futures/thread.py", "Condition.wait (threading.py", "EpollSelector.select")
OURS = ("commhub/", "hub_", "django/core/handlers", "django/utils/deprecation", "psycopg/connection", "redis")


def main() -> None:
    tool = sys.argv[1] if len(sys.argv) > 1 else "send_task"
    setup.recreate_database()
    setup.django_setup()
    fleet = setup.fleet(agents=1)
    hub = start("profile", asgi("commhub.asgi:application", workers=1), setup.SERVER_ENV)
    samples = LOGS / f"profile-{tool}.txt"
    try:
        gil = ["--gil"] if "--gil" in sys.argv else []  # only samples holding the GIL: CPU, not waits
        record = ["record", "--nonblocking", *gil, "-p", str(hub.pids()[-1]), "-d", "8", "-r", "200", "-f", "raw"]
        spy = subprocess.Popen(
            [str(Path(sys.executable).parent / "py-spy"), *record, "-o", str(samples)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if tool == "get_task":  # every call reads one task, sent before the load
            read = {"task_id": asyncio.run(_sent(hub.url, fleet.operator_token))}
            ARGUMENTS[tool] = lambda n: read
        call = calls.mcp(hub.url, tool, ARGUMENTS[tool])
        row = asyncio.run(
            measure("profile", tool, call, clients=16, seconds=10, headers=calls.bearer(fleet.operator_token))
        )
        spy.wait()
    finally:
        hub.stop()
    print(f"{tool}: {row.rate:.0f} req/s, p50 {row.percentile(0.5):.1f} ms")
    report(samples)


async def _sent(url: str, token: str) -> str:
    async with aiohttp.ClientSession(headers=calls.bearer(token)) as session:
        return (await calls.tool(session, url, "send_task", {"alias": "profile-0", "task": "read"}))["task_id"]


def report(samples: Path) -> None:
    own, within, total = Counter(), Counter(), 0
    for line in samples.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames, n = stack.split(";"), int(count)
        if frames[-1].startswith(IDLE):
            continue  # a pool thread waiting for work, not time spent on a request
        total += n
        own[frames[-1]] += n
        for frame in set(frames):
            within[frame] += n
    print(f"{total} samples; most time spent in:")
    for frame, n in own.most_common(8):
        print(f"  {100 * n / total:5.1f}%  {frame}")
    print("of which under:")
    for frame, n in within.most_common(150):
        if any(part in frame for part in OURS):
            print(f"  {100 * n / total:5.1f}%  {frame}")


if __name__ == "__main__":
    main()
