"""`commhub-agent node` against a live hub: many agents, their runtimes through stand-ins, outages,
crashes, stalls, budgets and reloads."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.helpers.live import hub_down, hub_up, rest, wait_for
from tests.helpers.node import (
    NodeProcess,
    command_agent,
    git_repository,
    node_toml,
    runs,
    send,
    task,
    wait_finished,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.live]

# How long the hub stays down in the outage test: two minutes, as the issue asks (longer than the
# outbox's largest backoff and the feed's reconnect, so both are exercised). Shorter only to debug.
OUTAGE = float(os.environ.get("COMMHUB_TEST_OUTAGE_SECONDS", "120"))


def test_command_agents_run_each_task_once_in_its_own_worktree(live_hub, dispatcher, worker, tmp_path):
    repo = git_repository(tmp_path / "repo")
    log = tmp_path / "runs.log"
    config = tmp_path / "node.toml"
    config.write_text(
        node_toml(
            live_hub,
            tmp_path / "state",
            {"cmd-1": command_agent(repo, log, concurrency=2), "cmd-2": command_agent(repo, log)},
        )
    )
    node = NodeProcess(live_hub, worker, config, tmp_path / "node.log").start()
    try:
        ids = [send(live_hub, dispatcher, f"cmd-{1 + n % 2}", f"job {n} write") for n in range(6)]
        rows = wait_finished(live_hub, dispatcher, ids, within=60)
    finally:
        node.stop()
    print(node.output())
    for task_id, row in rows.items():
        assert row["status"] == "replied", row
        assert f"branch: commhub/{row['to_name']}/{task_id}" in row["result"], row["result"]
        assert f"done-{task_id}.txt" in row["result"]
    assert runs(log) == {task_id: 1 for task_id in ids}


def start_node(hub, token, tmp_path, agents, **node) -> NodeProcess:
    config = tmp_path / "node.toml"
    config.write_text(node_toml(hub, tmp_path / "state", agents, **node))
    return NodeProcess(hub, token, config, tmp_path / "node.log").start()


def history(hub, agent, task_id: str) -> list[str]:
    return [e["to_status"] for e in rest(hub, agent, "GET", f"/tasks/{task_id}")["events"] if e["kind"] == "status"]


def runs_ended(log) -> int:
    return sum(line.startswith("end ") for line in log.read_text().splitlines()) if log.exists() else 0


def completions(hub, agent, alias: str) -> list[dict]:
    return rest(hub, agent, "GET", "/completions", params={"alias": alias, "limit": 500})["completions"]


def running(hub, agent, ids: list[str]) -> bool:
    return all(task(hub, agent, t)["status"] == "running" for t in ids)


def test_an_outage_of_the_hub_loses_no_report_and_fails_no_finished_task(live_hub, dispatcher, worker, tmp_path):
    """The hub is killed for two minutes while tasks run: they finish meanwhile; once it is back,
    every report arrives once, in order, and each task is replied, none failed as crashed."""
    repo, log = git_repository(tmp_path / "repo"), tmp_path / "runs.log"
    node = start_node(live_hub, worker, tmp_path, {"cmd": command_agent(repo, log, concurrency=4)})
    try:
        ids = [send(live_hub, dispatcher, "cmd", f"job {n} sleep 4 write") for n in range(4)]
        wait_for(lambda: running(live_hub, dispatcher, ids), within=30, what="the tasks running")
        hub_down(live_hub)
        wait_for(lambda: runs_ended(log) >= 4, within=60, what="the runs ended while the hub is down")
        time.sleep(OUTAGE)
        hub_up(live_hub)
        rows = wait_finished(live_hub, dispatcher, ids, within=90)
    finally:
        node.stop()
    for task_id, row in rows.items():
        assert row["status"] == "replied", (row, node.output())
        assert history(live_hub, dispatcher, task_id) == ["delivered", "acked", "running", "replied"]
    assert runs(log) == {task_id: 1 for task_id in ids}
    # Exactly once: one completion per task, although some were sent again after the outage.
    done = completions(live_hub, dispatcher, "cmd")
    assert len(done) == len(ids) and all(sum(f"/{t}\n" in c["result"] for c in done) == 1 for t in ids), done
    assert "not sent" in node.output()  # the outbox did hold them


def alive(task_id: str) -> bool:
    """A process of this task's run is still going (its environment names the task)."""
    needle = f"COMMHUB_TASK_ID={task_id}".encode()
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                return True
        except OSError:
            continue
    return False


def test_a_killed_node_reports_what_finished_and_fails_what_ran(live_hub, dispatcher, worker, tmp_path):
    """SIGKILL mid-run (and the hub away, so a finished task's report is still in the outbox): on
    restart the finished task is reported, not re-run; the one that was running is failed as
    crashed with a retry hint, and its orphaned run is stopped."""
    repo, log = git_repository(tmp_path / "repo"), tmp_path / "runs.log"
    node = start_node(live_hub, worker, tmp_path, {"cmd": command_agent(repo, log, concurrency=2)})
    try:
        quick = send(live_hub, dispatcher, "cmd", "quick sleep 2 write")
        slow = send(live_hub, dispatcher, "cmd", "slow sleep 120")
        wait_for(lambda: running(live_hub, dispatcher, [quick, slow]), within=30, what="both running")
        hub_down(live_hub)
        wait_for(lambda: journalled(tmp_path, quick), within=30, what="the quick run's report journalled")
        node.kill()
        hub_up(live_hub)
        assert alive(slow)
        node.start()
        rows = wait_finished(live_hub, dispatcher, [quick, slow], within=60)
    finally:
        node.stop()
    assert rows[quick]["status"] == "replied" and f"branch: commhub/cmd/{quick}" in rows[quick]["result"]
    assert rows[slow]["status"] == "failed", rows[slow]
    assert "crashed" in rows[slow]["result"] and "retry_task" in rows[slow]["result"]
    assert runs(log) == {quick: 1, slow: 1}
    wait_for(lambda: not alive(slow), within=10, what="the orphaned run stopped")
    replies = rest(live_hub, dispatcher, "GET", "/sessions/lead/inbox", params={"limit": 100})["messages"]
    assert [m["task_id"] for m in replies if m["type"] == "reply"] == [slow]  # one failure reply, no more


def journalled(tmp_path: Path, task_id: str) -> bool:
    """The node's outbox holds the final report of this task (written before it is sent)."""
    outbox = tmp_path / "state" / "outbox.jsonl"
    return any(
        '"final":true' in line and f'"task":"{task_id}"' in line for line in outbox.read_text().splitlines()
    )


def answer_next_question(hub, agent, task_id: str, answer: str) -> dict:
    def open_question():
        found = rest(hub, agent, "GET", "/questions", params={"task_id": task_id, "unanswered": "true"})["questions"]
        return next((q for q in found if q["task_id"] == task_id), None)

    question = wait_for(open_question, within=30, what=f"a question about {task_id}", every=0.2)
    assert question["options"] == ["kill", "wait", "retry"], question
    answered = rest(hub, agent, "POST", f"/questions/{question['question_id']}/answer", json={"answer": answer})
    assert answered["ok"], answered
    return question


def test_a_stalled_run_is_reported_blocked_and_the_answer_is_carried_out(live_hub, dispatcher, worker, tmp_path):
    repo, log = git_repository(tmp_path / "repo"), tmp_path / "runs.log"
    agent = command_agent(repo, log, concurrency=2, stall_after=4)
    node = start_node(live_hub, worker, tmp_path, {"cmd": agent})
    try:
        killed = send(live_hub, dispatcher, "cmd", "hangs sleep 120")
        question = answer_next_question(live_hub, dispatcher, killed, "kill")
        assert "no activity" in question["question"] and "half way" in question["question"]
        # Retried: it runs again from the start; the second silence is answered "wait": it finishes.
        retried = send(live_hub, dispatcher, "cmd", "slow sleep 6")
        answer_next_question(live_hub, dispatcher, retried, "retry")
        answer_next_question(live_hub, dispatcher, retried, "wait")
        rows = wait_finished(live_hub, dispatcher, [killed, retried], within=60)
    finally:
        node.stop()
    assert rows[killed]["status"] == "failed" and "stopped by the operator" in rows[killed]["result"], rows[killed]
    assert rows[retried]["status"] == "replied", rows[retried]
    assert runs(log) == {killed: 1, retried: 2}
    assert not alive(killed)


def test_sighup_adds_and_removes_agents_without_touching_a_running_task(live_hub, dispatcher, worker, tmp_path):
    repo, log = git_repository(tmp_path / "repo"), tmp_path / "runs.log"
    node = start_node(live_hub, worker, tmp_path, {"old": command_agent(repo, log)})
    try:
        running_task = send(live_hub, dispatcher, "old", "long sleep 6")
        wait_for(lambda: running(live_hub, dispatcher, [running_task]), within=30, what="the task running")
        node.config.write_text(node_toml(live_hub, tmp_path / "state", {"new": command_agent(repo, log)}))
        node.signal(signal.SIGHUP)
        wait_for(lambda: "config reloaded" in node.output(), within=10, what="the reload")
        added = send(live_hub, dispatcher, "new", "hello")
        left = send(live_hub, dispatcher, "old", "after removal")
        rows = wait_finished(live_hub, dispatcher, [running_task, added], within=60)
        time.sleep(2)
        assert task(live_hub, dispatcher, left)["status"] == "delivered"  # nobody runs "old" here any more
    finally:
        node.stop()
    assert rows[running_task]["status"] == "replied" and rows[added]["status"] == "replied"
    assert runs(log) == {running_task: 1, added: 1}
