"""Hub processes started the way production runs them, on the benchmark's own database."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
LOGS = Path("/tmp/commhub-bench")
# The stack's speed limit for get_inbox (issue 29): a raw ASGI app beside the project, not part of it.
LIMIT_APP = ROOT.parent / "shared" / "perf"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Server:
    name: str
    url: str
    process: subprocess.Popen[bytes]

    def pids(self) -> list[int]:
        """The master and its workers."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        kids = [int(pid) for pid in children.read_text().split()] if children.exists() else []
        return [self.process.pid, *kids]

    def rss_mb(self) -> list[float]:
        """Resident memory of each worker (the master too when it serves itself), in MB."""
        return list(self.worker_rss().values())

    def worker_rss(self) -> dict[int, float]:
        """Each worker's resident memory in MB, by pid (a restarted worker is another pid)."""
        sizes = {}
        for pid in self.pids()[1:] or self.pids():
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except FileNotFoundError:
                continue
            kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
            sizes[pid] = kb / 1024
        return sizes

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()


def start(name: str, command: list[str], env: dict[str, str], *, probe: str = "/healthz") -> Server:
    port = free_port()
    LOGS.mkdir(exist_ok=True)
    log = (LOGS / f"{name}.log").open("wb")
    argv = [arg.replace("{port}", str(port)) for arg in command]
    process = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT)
    server = Server(name, f"http://127.0.0.1:{port}", process)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited; see {LOGS / name}.log")
        try:
            if httpx.get(server.url + probe, timeout=2).status_code < 500:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"{name} did not start; see {LOGS / name}.log")


# How bench/run serves the ASGI apps (issue 29 item 3 measured them side by side): production's own
# serving by default; BENCH_SERVER picks another candidate to compare it with.
SERVERS = ("uvicorn", "uvicorn-h11", "granian")
SERVER = os.environ.get("BENCH_SERVER", "uvicorn")
if SERVER not in SERVERS:
    raise SystemExit(f"BENCH_SERVER={SERVER!r}: one of {', '.join(SERVERS)}")


def asgi(app: str, *, workers: int, pythonpath: Path | None = None) -> list[str]:
    """Production: gunicorn managing uvicorn workers on uvloop and httptools (commhub.serving's
    worker class). (`uvicorn --workers N` shares its socket in a way that loses TCP_NODELAY: every
    response then waits ~40 ms on delayed ACKs.) BENCH_SERVER=uvicorn-h11 is the same on asyncio
    and h11 (production before issue 29); BENCH_SERVER=granian is granian's own process manager."""
    if SERVER == "granian":
        return [
            sys.executable, "-m", "granian", app, "--interface", "asgi", "--host", "127.0.0.1", "--port", "{port}",
            "--workers", str(workers), "--loop", "uvloop", "--log-level", "warning",
            *(["--working-dir", str(pythonpath)] if pythonpath else []),
        ]  # fmt: skip
    worker = "uvicorn_worker.UvicornH11Worker" if SERVER == "uvicorn-h11" else "commhub.serving.UvicornWorker"
    return [
        sys.executable, "-m", "gunicorn", app, "--bind", "127.0.0.1:{port}", "--workers", str(workers),
        "--worker-class", worker, "--log-level", "warning",
        *(["--pythonpath", str(pythonpath)] if pythonpath else []),
    ]  # fmt: skip


def wsgi(app: str, *, workers: int, threads: int = 1) -> list[str]:
    """For comparison only: gunicorn sync workers, the classic Django deployment."""
    return [
        sys.executable, "-m", "gunicorn", app, "--bind", "127.0.0.1:{port}", "--workers", str(workers),
        "--threads", str(threads), "--log-level", "warning",
        "--worker-class", "sync",  # not gunicorn.conf.py's (read from the working directory): an ASGI worker
    ]  # fmt: skip


def limit_app(*, workers: int) -> list[str]:
    """The reference app (../shared/perf/limit_app.py) served exactly as the hub is."""
    return asgi("limit_app:app", workers=workers, pythonpath=LIMIT_APP)


def limit_env(*, database_url: str, token: str, network_id: str) -> dict[str, str]:
    """The reference app reads the hub's database and knows one bearer token (the load's)."""
    return {"LIMIT_DSN": database_url, "LIMIT_TOKENS": f"{token}={network_id}"}
