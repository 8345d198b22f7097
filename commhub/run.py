"""`make run`: the whole hub on one machine, as one command: the web server and the two workers that
run beside it, each its own process, children of this one.

- web: daphne through `commhub.serving` (access lines redacted), on --bind and --port;
- sweep: `manage.py sweep`, so lapsed leases, due retries and expired approvals are settled on time
  when nobody reads, and aged channel posts deleted;
- webhooks: `manage.py webhooks`, the outbound webhooks' deliverer.

Stopping this process (Ctrl-C, SIGTERM) stops all three; any one of them exiting stops the others
and this process exits with its status, so a crash is never half a hub running on. In production
run each one under your process manager instead (README, Deployment); `--no-workers` serves the web
alone, as before.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parent.parent
STOP_SECONDS = 10  # how long a child has to stop on SIGTERM before it is killed


def commands(bind: str, port: int, *, sweep_interval: float, workers: bool) -> dict[str, list[str]]:
    python = sys.executable
    web = [python, "-m", "commhub.serving", "--bind", bind, "--port", str(port), "commhub.asgi:application"]
    if not workers:
        return {"web": web}
    return {
        "web": web,
        "sweep": [python, "manage.py", "sweep", "--interval", str(sweep_interval)],
        "webhooks": [python, "manage.py", "webhooks"],
    }


def _stop_with(parent: int) -> Callable[[], None]:
    """What the child runs before it starts: SIGTERM when `parent` dies, even by SIGKILL (Linux), so
    no worker outlives the hub it was started for (and if it died already, the child does not
    start). Its own process group: Ctrl-C in the terminal reaches `parent` only, which stops the
    children in order."""

    def before_exec() -> None:
        os.setpgid(0, 0)
        if sys.platform == "linux":
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(1)

    return before_exec


def supervise(named: dict[str, list[str]]) -> int:
    """Runs the children until one exits or this process is told to stop; then stops the others
    (SIGTERM, then SIGKILL after STOP_SECONDS or at a second signal). 0 when told to stop, else the
    first child's failure. Only this function reaps: the signal handler only signals."""
    pids: dict[int, str] = {}
    signals = 0

    def stop_all(sig: int = signal.SIGTERM) -> None:
        for pid in list(pids):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:  # exited, not reaped yet
                pass

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal signals
        signals += 1
        stop_all(signal.SIGTERM if signals == 1 else signal.SIGKILL)

    for stop in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, on_signal)
    for name, argv in named.items():
        if signals:
            break
        child = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, preexec_fn=_stop_with(os.getpid()))
        pids[child.pid] = name
    if signals:  # told to stop while they were starting
        stop_all()
    failure = 0
    deadline: float | None = None  # once stopping: when whatever is left gets SIGKILL
    while pids:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            if deadline is None and signals:
                deadline = time.monotonic() + STOP_SECONDS
            if deadline is not None and time.monotonic() >= deadline:
                stop_all(signal.SIGKILL)
                deadline = math.inf
            time.sleep(0.05)
            continue
        name, code = pids.pop(pid), os.waitstatus_to_exitcode(status)
        if deadline is None and not signals:  # the first to exit, unasked: stop the rest
            print(f"commhub: {name} exited ({code}); stopping the others", file=sys.stderr, flush=True)
            failure = code if code > 0 else 1
            stop_all()
            deadline = time.monotonic() + STOP_SECONDS
    return failure


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m commhub.run", description=__doc__.splitlines()[0])
    parser.add_argument("--bind", default="127.0.0.1", help="Address the web server listens on (127.0.0.1).")
    parser.add_argument("--port", type=int, default=8000, help="Its port (8000).")
    parser.add_argument("--sweep-interval", type=float, default=5.0, help="Seconds between sweeps (5).")
    parser.add_argument("--no-workers", action="store_true", help="The web server alone: no sweep, no webhooks.")
    options = parser.parse_args(argv)
    named = commands(options.bind, options.port, sweep_interval=options.sweep_interval, workers=not options.no_workers)
    return supervise(named)


if __name__ == "__main__":
    sys.exit(main())
