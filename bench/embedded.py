"""The embedded default, as `make run` serves it: daphne through `python -m commhub.serving`, one
process, SQLite, the in-memory channel layer. Its own database file, seeded by a process of its
own (bench.seed), and the same cells against the same reference views as the production serving.
"""

from __future__ import annotations

import os
import subprocess
import sys

from bench import throughput
from bench.load import Row
from bench.report import EMBEDDED
from bench.seed import Seeds
from bench.server import LOGS, ROOT, Server, start

DATABASE = LOGS / "embedded.sqlite3"
ENV = {
    "DJANGO_SETTINGS_MODULE": "bench.settings",
    "DATABASE_URL": f"sqlite:///{DATABASE}",
    "REDIS_URL": "",  # the default: channels' in-memory layer, limits counted in memory
    "COMMHUB_RATE_LIMIT_STORAGE": "memory://",
    "COMMHUB_WRITE_RATE_LIMIT": "100000000/minute",
    "LOG_LEVEL": "WARNING",
}


def serve() -> Server:
    """A fresh database file, migrated, and daphne on it."""
    LOGS.mkdir(exist_ok=True)
    for leftover in (DATABASE, DATABASE.with_name(DATABASE.name + "-wal"), DATABASE.with_name(DATABASE.name + "-shm")):
        leftover.unlink(missing_ok=True)
    _python("manage.py", "migrate", "--noinput", "--verbosity", "0")
    daphne = [sys.executable, "-m", "commhub.serving", "--bind", "127.0.0.1", "--port", "{port}"]
    return start("embedded", [*daphne, "commhub.asgi:application"], ENV)


def seed(*, clients: tuple[int, ...], seconds: float) -> Seeds:
    return Seeds.from_json(
        _python("-m", "bench.seed", "--clients", ",".join(map(str, clients)), "--seconds", str(seconds))
    )


async def run(server: Server, seeds: Seeds, *, seconds: float) -> list[Row]:
    return await throughput.run(server.url, seeds, seconds=seconds, full=False, prefix=EMBEDDED)


def _python(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env={**os.environ, **ENV}, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise RuntimeError(f"{' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout
