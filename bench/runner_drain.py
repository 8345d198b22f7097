"""How fast `commhub-agent run` drains a queue (issue 24): trivial tasks queued for one alias before
the runner starts, then the time from the runner's start until the hub has every one of them
replied, at --concurrency 1 and a --poll of 30 s (the default) — a freed slot must take the next task
at once, never wait for the poll. A benchmark, not a test: it prints figures. Target: 20 tasks in
under 5 s.

    .venv/bin/python -m bench.runner_drain                  # SQLite in a temporary directory
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/commhub_bench_agent REDIS_URL=redis://127.0.0.1:6379/9 \\
        .venv/bin/python -m bench.runner_drain              # the production stack (database recreated)

The hub runs as production runs it (gunicorn with one uvicorn worker); the runner runs as an agent
machine runs it (its own process, agent/ on its PYTHONPATH); the task command is a shell that reads
the task and prints one line.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bench.agent_latency import ROOT, bench_hub

ALIAS = "bench-runner"
COMMAND = ["/bin/sh", "-c", "cat >/dev/null; echo done"]
TARGET_SECONDS = 5.0


def reported(journal: Path) -> int:
    text = journal.read_text() if journal.exists() else ""
    return sum('"state": "reported"' in line for line in text.splitlines(keepends=True) if line.endswith("\n"))


def drain(
    url: str, dispatcher: str, agent: str, state: str, tasks: int, concurrency: int, poll: float
) -> tuple[float, float]:
    """Seconds from the runner's start (its start-up included) until the first and until every
    queued task is replied."""
    http = httpx.Client(base_url=f"{url}/api/v1", headers={"Authorization": f"Bearer {dispatcher}"}, timeout=30)
    ids = []
    for n in range(tasks):
        reply = http.post("/tasks", json={"alias": ALIAS, "task": f"bench task {n}", "from_session": "bench"})
        assert reply.status_code == 201, reply.text
        ids.append(reply.json()["task_id"])
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "agent"),
        "COMMHUB_URL": url,
        "COMMHUB_TOKEN": agent,
        "COMMHUB_AGENT_STATE_DIR": state,
    }
    argv = ["run", "--alias", ALIAS, "--concurrency", str(concurrency), "--poll", f"{poll:g}", "--", *COMMAND]
    started = time.perf_counter()
    runner = subprocess.Popen(
        [sys.executable, "-m", "commhub_agent", *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    # Watched in the runner's journal (a delivery is "reported" once report_completion answered), so
    # the watching puts no load on the hub; the hub's word is checked at the end.
    journal = Path(state) / f"{ALIAS}.runner.jsonl"
    try:
        deadline, first = started + 4 * poll + 60, 0.0
        while time.perf_counter() < deadline:
            done = reported(journal)
            if done and not first:
                first = time.perf_counter() - started
            if done >= tasks:
                seconds = time.perf_counter() - started
                break
            time.sleep(0.02)
        else:
            raise SystemExit(f"the runner did not drain {tasks} tasks in {deadline - started:.0f} s")
        listed = http.get("/tasks", params={"alias": ALIAS, "status": "replied", "limit": tasks}).json()
        assert {t["task_id"] for t in listed["tasks"]} == set(ids), listed
        return first, seconds
    finally:
        runner.terminate()
        runner.wait(timeout=30)
        http.close()


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--tasks", type=int, default=20)
    options.add_argument("--concurrency", type=int, default=1)
    options.add_argument("--poll", type=float, default=30.0, help="the runner's --poll (default 30, its default)")
    args = options.parse_args()
    with bench_hub("bench-runner", ALIAS) as (url, dispatcher, agent, tmp, backend):
        first, seconds = drain(url, dispatcher, agent, f"{tmp}/state", args.tasks, args.concurrency, args.poll)
    print(f"commhub-agent run, queued tasks drained ({backend}, gunicorn 1 uvicorn worker)")
    print(f"  {args.tasks} tasks at --concurrency {args.concurrency}, --poll {args.poll:g} s")
    print(f"  drained in {seconds:.2f} s from the runner's start (the first task replied at {first:.2f} s)")
    if args.tasks > 1:
        print(f"  then {(seconds - first) / (args.tasks - 1) * 1000:.0f} ms a task, start to reply")
    if args.tasks == 20 and args.concurrency == 1:
        print(f"  target: 20 tasks in < {TARGET_SECONDS:g} s: {'met' if seconds < TARGET_SECONDS else 'MISSED'}")


if __name__ == "__main__":
    main()
