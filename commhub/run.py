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
import os
import signal
import subprocess
import sys
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


def _stop_with_parent() -> None:
    """In the child, before it runs: SIGTERM when this process dies, even by SIGKILL (Linux), so no
    worker outlives the hub it was started for. Its own process group: Ctrl-C in the terminal
    reaches this process only, which stops the children in order."""
    os.setpgid(0, 0)
    if sys.platform == "linux":
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def supervise(named: dict[str, list[str]]) -> int:
    children = {name: subprocess.Popen(argv, cwd=ROOT, preexec_fn=_stop_with_parent) for name, argv in named.items()}
    names = {child.pid: name for name, child in children.items()}
    asked_to_stop = False

    def stop_all() -> None:
        for child in children.values():
            if child.poll() is None:
                child.terminate()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal asked_to_stop
        asked_to_stop = True
        stop_all()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    pid, status = os.wait()  # the first child to exit, whether asked to or not
    code = os.waitstatus_to_exitcode(status)
    if not asked_to_stop:
        print(f"commhub: {names.get(pid, pid)} exited ({code}); stopping the others", file=sys.stderr, flush=True)
        stop_all()
    for child in children.values():
        if child.pid == pid:
            child.returncode = code  # reaped above
            continue
        try:
            child.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    return 0 if asked_to_stop else (code if code > 0 else 1)


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
