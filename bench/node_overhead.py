"""`commhub-agent node`'s own cost (issue 25): a benchmark, not a test; it prints figures.

1. Overhead: the time from the hub delivering a task (its `delivered_at`) to the runtime's process
   running, for tasks sent at a steady rate to four command agents. The command is a shell that
   first writes the time, so what is measured is the node's path (the hub's push, ack_inbox, the
   journal's fsync, the workspace, the spawn), not a runtime's own start-up.
   Targets: p99 < 100 ms. Measured with `isolation = "dir"` and again with `"worktree"` (git's own
   `worktree add` is part of the second).
2. Memory: the node's RSS with 50 tasks running at once through the three runtimes (20 claude runs
   through the SDK and its stand-in CLI, 15 codex runs through its stand-in, 15 commands), each
   hanging until stopped. Target: < 150 MB.

    .venv/bin/python -m bench.node_overhead                 # SQLite in a temporary directory
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/commhub_bench_node REDIS_URL=redis://127.0.0.1:6379/9 \\
        .venv/bin/python -m bench.node_overhead             # the production stack (database recreated)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import httpx

from bench.agent_latency import ROOT, bench_hub

STANDINS = ROOT / "tests" / "agent" / "standins"
STAMP = ["/bin/sh", "-c", 'date +%s.%N > "$STAMPS/$COMMHUB_TASK_ID"; cat >/dev/null']
TARGET_P99_MS, TARGET_RSS_MB = 100.0, 150.0


def toml(url: str, state: Path, agents: dict[str, dict]) -> str:
    lines = ["[node]", f"hub = {json.dumps(url)}", 'name = "bench-node"', f"state_dir = {json.dumps(str(state))}"]
    lines.append("stop_grace = 0")
    for alias, settings in agents.items():
        lines.append(f"[agents.{json.dumps(alias)}]")
        for key, value in settings.items():
            if key == "env":
                value = "{ " + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items()) + " }"
                lines.append(f"{key} = {value}")
            elif key != "options":
                lines.append(f"{key} = {json.dumps(value)}")
        if settings.get("options"):
            lines.append(f"[agents.{json.dumps(alias)}.options]")
            lines += [f"{k} = {json.dumps(v)}" for k, v in settings["options"].items()]
    return "\n".join(lines) + "\n"


def start_node(url: str, token: str, folder: Path, agents: dict[str, dict]) -> subprocess.Popen[bytes]:
    folder.mkdir(parents=True)
    (folder / "node.toml").write_text(toml(url, folder / "state", agents))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "agent"),
        "COMMHUB_TOKEN": token,
        "PATH": f"{STANDINS}{os.pathsep}{os.environ['PATH']}",
    }
    command = [sys.executable, "-m", "commhub_agent", "node", "--config", str(folder / "node.toml")]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=(folder / "node.log").open("wb"))


def stop(node: subprocess.Popen[bytes]) -> None:
    node.send_signal(signal.SIGTERM)
    try:
        node.wait(timeout=60)
    except subprocess.TimeoutExpired:
        node.kill()


def wait_idle(http: httpx.Client, aliases: list[str]) -> None:
    """Until every agent of the node has said it is there (its first heartbeat)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if all(http.get(f"/sessions/{a}").json().get("session") for a in aliases):
            return
        time.sleep(0.1)
    raise SystemExit("the node's agents did not report in 60 s")


def overhead(
    url: str, dispatcher: str, agent: str, folder: Path, isolation: str, tasks: int, rate: float
) -> list[float]:
    """Milliseconds from delivered_at to the runtime's first instruction, one per task."""
    stamps = folder / "stamps"
    stamps.mkdir(parents=True)
    repo = folder / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "b",
        ],
        check=True,
    )
    aliases = [f"bench-{isolation}-{n}" for n in range(4)]
    agents = {
        a: {
            "runtime": "command",
            "command": STAMP,
            "concurrency": 4,
            "isolation": isolation,
            "repository": str(repo),
            "env": {"STAMPS": str(stamps)},
        }
        for a in aliases
    }
    node = start_node(url, agent, folder / "node", agents)
    http = httpx.Client(base_url=f"{url}/api/v1", headers={"Authorization": f"Bearer {dispatcher}"}, timeout=30)
    try:
        wait_idle(http, aliases)
        ids = []
        for n in range(tasks):
            sent = time.perf_counter()
            reply = http.post("/tasks", json={"alias": aliases[n % 4], "task": f"t{n}", "from_session": "bench"})
            assert reply.status_code == 201, reply.text
            ids.append(reply.json()["task_id"])
            time.sleep(max(0.0, 1 / rate - (time.perf_counter() - sent)))
        deadline = time.monotonic() + 120
        while len(list(stamps.iterdir())) < tasks and time.monotonic() < deadline:
            time.sleep(0.1)
        latencies = []
        for task_id in ids:
            row = http.get(f"/tasks/{task_id}").json()["task"]
            delivered = datetime.fromisoformat(row["delivered_at"].replace("Z", "+00:00")).timestamp()
            latencies.append((float((stamps / task_id).read_text()) - delivered) * 1000)
        return latencies
    finally:
        stop(node)
        http.close()


def rss_with_50_running(url: str, dispatcher: str, agent: str, folder: Path) -> float:
    """The node's resident memory (MB) once 50 runs hang at once."""
    claude, codex, command = 20, 15, 15
    agents = {
        "bench-claude": {
            "runtime": "claude",
            "concurrency": claude,
            "isolation": "dir",
            "stall_after": 3600,
            "env": {"CLAUDE_STANDIN_SCENARIO": "hang", "CLAUDE_STANDIN_DIR": str(folder / "claude")},
            # The claude runtime's CLI: the stand-in, through the SDK's cli_path.
            "options": {"cli_path": str(STANDINS / "claude_cli.py")},
        },
        "bench-codex": {
            "runtime": "codex",
            "concurrency": codex,
            "isolation": "dir",
            "stall_after": 3600,
            "env": {"CODEX_STANDIN_SCRIPT": "@codex hang", "CODEX_STANDIN_DIR": str(folder / "codex")},
        },
        "bench-command": {
            "runtime": "command",
            "concurrency": command,
            "isolation": "dir",
            "stall_after": 3600,
            "command": ["/bin/sh", "-c", "cat >/dev/null; sleep 3600"],
        },
    }
    node = start_node(url, agent, folder / "node", agents)
    http = httpx.Client(base_url=f"{url}/api/v1", headers={"Authorization": f"Bearer {dispatcher}"}, timeout=30)
    try:
        wait_idle(http, list(agents))
        for alias, count in (("bench-claude", claude), ("bench-codex", codex), ("bench-command", command)):
            for n in range(count):
                http.post("/tasks", json={"alias": alias, "task": f"hang {n}", "from_session": "bench"})
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            running = http.get("/tasks", params={"status": "running", "limit": 100}).json()["tasks"]
            if len(running) >= 50:
                break
            time.sleep(0.5)
        else:
            raise SystemExit(f"only {len(running)} of 50 runs started; see {folder / 'node' / 'node.log'}")
        time.sleep(2)  # settled: every run's streams open
        return rss_mb(node.pid)
    finally:
        stop(node)
        http.close()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"no VmRSS for {pid}")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * fraction + 0.5) - 1)]


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--tasks", type=int, default=200)
    options.add_argument("--rate", type=float, default=5.0, help="tasks sent a second (default 5)")
    args = options.parse_args()
    with bench_hub("bench-node", "bench-node") as (url, dispatcher, agent, tmp, backend):
        print(f"commhub-agent node ({backend}, gunicorn 1 uvicorn worker)")
        for isolation in ("dir", "worktree"):
            ms = overhead(url, dispatcher, agent, Path(tmp) / isolation, isolation, args.tasks, args.rate)
            p99 = percentile(ms, 0.99)
            verdict = "met" if p99 < TARGET_P99_MS else "MISSED"
            print(
                f"  delivered → runtime started, isolation {isolation}: {len(ms)} tasks at {args.rate:g}/s: "
                f"p50 {statistics.median(ms):.1f} ms  p99 {p99:.1f} ms  max {max(ms):.1f} ms"
                f"  (target p99 < {TARGET_P99_MS:g} ms: {verdict})"
            )
        rss = rss_with_50_running(url, dispatcher, agent, Path(tmp) / "rss")
        verdict = "met" if rss < TARGET_RSS_MB else "MISSED"
        print(
            f"  node RSS with 50 runs at once (20 claude, 15 codex, 15 command): {rss:.0f} MB"
            f"  (target < {TARGET_RSS_MB:g} MB: {verdict})"
        )


if __name__ == "__main__":
    main()
