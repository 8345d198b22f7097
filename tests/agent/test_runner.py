"""`commhub-agent run` with a test program standing in for the agent, against a live hub."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.live import companion_command, companion_env, journal, rest, wait_for
from tests.helpers.node import task

pytestmark = pytest.mark.django_db(transaction=True)

ALIAS = "codex-1"
FAKE_AGENT = Path(__file__).with_name("fake_agent.py")
FINISHED = ("replied", "failed", "cancelled", "expired")


def start_runner(hub, worker, state_dir: Path, log: Path, processes: list, *args: str, poll: str = "5", **env: str):
    process = subprocess.Popen(
        companion_command("run", "--alias", ALIAS, "--poll", poll, *args, "--", sys.executable, str(FAKE_AGENT)),
        env=companion_env(hub, worker, state_dir, FAKE_AGENT_LOG=str(log), **env),
        stdout=subprocess.DEVNULL,
        stderr=(state_dir / "runner.log").open("ab"),
    )
    processes.append(process)
    return process


def send(hub, dispatcher, text: str, **extra: Any) -> str:
    reply = rest(
        hub, dispatcher, "POST", "/tasks", json={"alias": ALIAS, "task": text, "from_session": "lead", **extra}
    )
    assert reply["ok"], reply
    return reply["task_id"]


def runs(log: Path) -> collections.Counter[str]:
    lines = log.read_text().splitlines() if log.exists() else []
    return collections.Counter(line.split()[1] for line in lines if line.startswith("start"))


def _kill_orphan(log: Path, task_id: str) -> None:
    for line in log.read_text().splitlines():
        kind, ran, _, pid = line.split()
        if kind == "start" and ran == task_id:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_runner_processes_50_tasks_at_concurrency_4(live_hub, dispatcher, worker, state_dir, processes, tmp_path):
    log = tmp_path / "runs.log"
    start_runner(live_hub, worker, state_dir, log, processes, "--concurrency", "4")
    wait_for(lambda: rest(live_hub, dispatcher, "GET", f"/sessions/{ALIAS}")["session"], within=30, what="the runner")

    # Progress lines become report_status progress: watch the session while the tasks run.
    seen: list[tuple[str, Any, Any]] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            session = rest(live_hub, dispatcher, "GET", f"/sessions/{ALIAS}")["session"]
            seen.append((session["status"], session.get("progress"), session.get("task")))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        ids = {
            send(live_hub, dispatcher, f"job {n}" + (" fail" if n % 5 == 0 else ""), priority="high"): n
            for n in range(50)
        }
        wait_for(
            lambda: all(task(live_hub, dispatcher, t)["status"] in FINISHED for t in ids),
            within=120,
            what="50 tasks finished",
            every=1,
        )
    finally:
        done.set()
        watcher.join()

    for task_id, n in ids.items():
        row = task(live_hub, dispatcher, task_id)
        if n % 5 == 0:
            assert row["status"] == "failed", row
            assert "exit status 3" in row["result"] and f"something broke in {task_id}" in row["result"]
        else:
            assert row["status"] == "replied", row
            # The progress line was reported as progress (below), not kept in the result.
            assert row["result"] == f"done: job {n} (from lead, priority high)\n", row
    completions = rest(live_hub, dispatcher, "GET", "/completions", params={"alias": ALIAS, "limit": 500})
    assert len(completions["completions"]) == 50
    assert sum(c["result"].startswith("failed: exit status 3") for c in completions["completions"]) == 10

    # Each task ran once, never more than four at a time.
    assert set(runs(log)) == set(ids) and set(runs(log).values()) == {1}
    events = sorted((float(t), kind) for kind, _, t, _ in (line.split() for line in log.read_text().splitlines()))
    at_once, most = 0, 0
    for _, kind in events:
        at_once += 1 if kind == "start" else -1
        most = max(most, at_once)
    assert 1 < most <= 4, most
    assert any(status == "working" and progress == 50 and task_id in ids for status, progress, task_id in seen)
    # The failed ones were answered to their sender, with the exit status and the stderr tail.
    replies = rest(live_hub, dispatcher, "GET", "/sessions/lead/inbox", params={"limit": 100})["messages"]
    assert sum("exit status 3" in m["content"] for m in replies if m["type"] == "reply") == 10


def test_queued_tasks_run_back_to_back_without_waiting_for_the_poll(
    live_hub, dispatcher, worker, state_dir, processes, tmp_path
):
    # At concurrency 1 a freed slot must fetch the next queued task at once: one wait for the
    # --poll interval (60 s) between two of them would take the drain past the bound.
    log = tmp_path / "runs.log"
    ids = [send(live_hub, dispatcher, f"queued {n}") for n in range(8)]
    started = time.monotonic()
    start_runner(live_hub, worker, state_dir, log, processes, poll="60")
    wait_for(
        lambda: all(task(live_hub, dispatcher, t)["status"] in FINISHED for t in ids),
        within=45,
        what="8 queued tasks drained well within one --poll interval",
        every=0.5,
    )
    assert time.monotonic() - started < 45
    assert all(task(live_hub, dispatcher, t)["status"] == "replied" for t in ids)
    assert runs(log) == dict.fromkeys(ids, 1)
    # More tasks sent while it works are taken as soon as a slot frees, not at the next poll.
    later = [send(live_hub, dispatcher, f"later {n}") for n in range(4)]
    wait_for(
        lambda: all(task(live_hub, dispatcher, t)["status"] in FINISHED for t in later),
        within=30,
        what="tasks sent to a runner already started",
        every=0.5,
    )


def test_sigterm_lets_a_short_task_finish_and_hands_back_a_long_one(
    live_hub, dispatcher, worker, state_dir, processes, tmp_path
):
    log = tmp_path / "runs.log"
    runner = start_runner(live_hub, worker, state_dir, log, processes, "--concurrency", "2", "--stop-grace", "4")
    short = send(live_hub, dispatcher, "short sleep 2")
    long = send(live_hub, dispatcher, "long sleep 60")
    wait_for(lambda: set(runs(log)) == {short, long}, within=30, what="both tasks running")
    wait_for(lambda: task(live_hub, dispatcher, long)["status"] == "running", within=10, what="running")

    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=30) == 0

    assert task(live_hub, dispatcher, short)["status"] == "replied"
    handed_back = rest(live_hub, dispatcher, "GET", f"/tasks/{long}")
    assert handed_back["task"]["status"] == "failed"
    assert "runner stopped (SIGTERM)" in handed_back["task"]["result"]
    assert [e["to_status"] for e in handed_back["events"]][-2:] == ["running", "failed"]
    replies = rest(live_hub, dispatcher, "GET", "/sessions/lead/inbox")["messages"]
    assert any("runner stopped (SIGTERM)" in m["content"] and "retry_task" in m["content"] for m in replies)
    session = rest(live_hub, dispatcher, "GET", f"/sessions/{ALIAS}")["session"]
    assert session["status"] == "offline"
    # Nothing was left half-taken, and a new task waits for the next runner instead of being taken.
    later = send(live_hub, dispatcher, "after the stop")
    assert task(live_hub, dispatcher, later)["status"] == "delivered"


def test_a_runner_killed_and_restarted_never_runs_a_task_twice(
    live_hub, dispatcher, worker, state_dir, processes, tmp_path
):
    log = tmp_path / "runs.log"
    # 1. Killed after the task ran, before it was reported: the restart reports it, does not re-run it.
    first = start_runner(live_hub, worker, state_dir, log, processes, COMMHUB_AGENT_TEST_CRASH="after-done")
    done = send(live_hub, dispatcher, "finished before the crash")
    assert first.wait(timeout=60) == -signal.SIGKILL
    assert runs(log) == {done: 1}
    assert task(live_hub, dispatcher, done)["status"] == "running"  # the hub has not heard yet
    assert [e["state"] for e in journal(state_dir, ALIAS)] == ["started", "done"]

    # 2. Killed while running a task: the restart closes it as failed, with the reason, not re-run.
    second = start_runner(live_hub, worker, state_dir, log, processes)
    wait_for(lambda: task(live_hub, dispatcher, done)["status"] == "replied", within=30, what="the report")
    assert task(live_hub, dispatcher, done)["result"].startswith("done: finished before")
    interrupted = send(live_hub, dispatcher, "interrupted sleep 60")
    wait_for(lambda: task(live_hub, dispatcher, interrupted)["status"] == "running", within=30, what="running")
    second.kill()
    second.wait(timeout=10)
    _kill_orphan(log, interrupted)  # its program outlived the runner (a process group of its own)

    third = start_runner(live_hub, worker, state_dir, log, processes)
    wait_for(lambda: task(live_hub, dispatcher, interrupted)["status"] == "failed", within=30, what="closed")
    assert "crashed" in task(live_hub, dispatcher, interrupted)["result"]
    fresh = send(live_hub, dispatcher, "after the restarts")
    wait_for(lambda: task(live_hub, dispatcher, fresh)["status"] == "replied", within=30, what="a new task")
    assert runs(log) == {done: 1, interrupted: 1, fresh: 1}
    third.terminate()
    assert third.wait(timeout=30) == 0
