"""`commhub-agent node` against a live hub: many agents, their runtimes through stand-ins, outages,
crashes, stalls, budgets and reloads."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from tests.helpers import metrics
from tests.helpers.live import hub_down, hub_up, rest, wait_for
from tests.helpers.node import (
    STANDINS,
    NodeProcess,
    alive,
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


@pytest.mark.slow  # two minutes of outage: started first, so the other worker is not left waiting at the end
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
    return any('"final":true' in line and f'"task":"{task_id}"' in line for line in outbox.read_text().splitlines())


def answer_next_question(hub, agent, task_id: str, answer: str, options=("kill", "wait", "retry")) -> dict:
    def open_question():
        found = rest(hub, agent, "GET", "/questions", params={"task_id": task_id, "unanswered": "true"})["questions"]
        return next((q for q in found if q["task_id"] == task_id), None)

    question = wait_for(open_question, within=30, what=f"a question about {task_id}", every=0.2)
    assert question["options"] == list(options), question
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


RANK = {"high": 0, "normal": 1, "low": 2}


def claude_task(n: int) -> tuple[str, tuple[int, int, float]]:
    """A task for the Claude stand-in, with the usage its transcript is to report: (in, out, USD)."""
    usage = {"input_tokens": 100 + n, "output_tokens": 10 + n, "cache_read_input_tokens": 5 * n}
    usage["cache_creation_input_tokens"] = 7
    cost = round(0.001 * (n + 1), 6)
    line = json.dumps({"usage": usage, "cost_usd": cost})
    return f"task {n}\nclaude-standin: {line}", (100 + n + 5 * n + 7, 10 + n, cost)


def codex_task(n: int) -> tuple[str, tuple[int, int, None]]:
    """A task for the Codex stand-in: it writes a file and reports this turn's usage (input tokens
    count the cached ones, output tokens the reasoning ones, as Codex's own accounting does)."""
    return f"task {n}\n@codex write notes-{n}.txt note {n}\n@codex usage {1000 + n} 200 {300 + n} 50", (
        1000 + n,
        300 + n,
        None,
    )


def test_six_agents_of_three_runtimes_run_sixty_tasks(live_hub, dispatcher, worker, tmp_path):
    """Two claude agents (the SDK driving a stand-in CLI), two codex (a stand-in on PATH), two
    command agents: 60 tasks of mixed priority, each run once in its own worktree; each alias's
    later tasks resume its first session; the hub's usage equals what the transcripts reported."""
    repo, log = git_repository(tmp_path / "repo"), tmp_path / "runs.log"
    claude_dir, codex_dir = tmp_path / "claude", tmp_path / "codex"
    worktree = {"repository": str(repo), "isolation": "worktree"}
    agents = {
        **{
            f"claude-{n}": {
                "runtime": "claude",
                **worktree,
                "env": {"CLAUDE_STANDIN_DIR": str(claude_dir)},
                "options": {"cli_path": str(STANDINS / "claude_cli.py")},
            }
            for n in (1, 2)
        },
        **{
            f"codex-{n}": {"runtime": "codex", **worktree, "env": {"CODEX_STANDIN_DIR": str(codex_dir)}} for n in (1, 2)
        },
        **{f"cmd-{n}": command_agent(repo, log, concurrency=3) for n in (1, 2)},
    }
    sent: dict[str, tuple[str, str, int]] = {}  # task id -> alias, priority, n
    expected: dict[str, tuple[int, int, float | None]] = {}
    for n in range(60):
        alias = list(agents)[n % 6]
        runtime = alias.split("-")[0]
        text, usage = (
            claude_task(n)
            if runtime == "claude"
            else codex_task(n)
            if runtime == "codex"
            else (
                f"task {n} write",
                None,
            )
        )
        priority = ("high", "normal", "low")[(n // 6) % 3]
        task_id = send(live_hub, dispatcher, alias, text, priority=priority)
        sent[task_id] = (alias, priority, n)
        if usage:
            expected[task_id] = usage
    # Everything is queued before the node starts: each single-slot alias must take its tasks by priority.
    node = NodeProcess(live_hub, worker, tmp_path / "node.toml", tmp_path / "node.log")
    node.config.write_text(node_toml(live_hub, tmp_path / "state", agents))
    node.env = {"PATH": f"{STANDINS}{os.pathsep}{os.environ['PATH']}"}
    node.start()
    try:
        rows = wait_finished(live_hub, dispatcher, list(sent), within=300)
        # The node on the hub: its host, runtimes with versions, agents and slots (10 in all).
        (machine,) = rest(live_hub, dispatcher, "GET", "/nodes")["nodes"]
        sessions = [rest(live_hub, dispatcher, "GET", f"/sessions/{alias}")["session"] for alias in agents]
    finally:
        node.stop()
    assert (machine["node_id"], machine["slots_total"], machine["agent_count"]) == ("test-node", 10, 6), machine
    # Each tool asked as its runtime runs it: the stand-ins answer --version as the real CLIs do.
    versions = {r["name"]: r["version"] for r in machine["runtimes"]}
    assert versions == {"claude": "2.1.332", "codex": "0.171.0"}, versions
    assert all(s["node_id"] == "test-node" for s in sessions), sessions
    for task_id, (alias, _, _) in sent.items():
        assert rows[task_id]["status"] == "replied", (rows[task_id], node.output()[-3000:])
        assert f"branch: commhub/{alias}/{task_id}\n" in rows[task_id]["result"], rows[task_id]["result"]

    # Each ran once: the command agents' log, the stand-ins' records of their runs.
    assert runs(log) == {t: 1 for t, (alias, _, _) in sent.items() if alias.startswith("cmd")}
    claude_runs = json.loads((claude_dir / "claude-sessions.json").read_text())["runs"]
    codex_runs = [json.loads(line) for line in (codex_dir / "calls.jsonl").read_text().splitlines()]
    for records, runtime in ((claude_runs, "claude"), (codex_runs, "codex")):
        ran = [r["prompt"].split("\n")[0] for r in records]
        assert sorted(ran) == sorted(f"task {n}" for alias, _, n in sent.values() if alias.startswith(runtime))
        for alias in (f"{runtime}-1", f"{runtime}-2"):
            mine = [r for r in records if f"/{alias}/" in r["cwd"]]
            assert len(mine) == 10, mine
            # The first task starts a session; each later one resumes it (the stand-in checked it exists).
            first = mine[0]["session"] if runtime == "claude" else mine[0]["thread_id"]
            if runtime == "claude":
                assert mine[0]["resumed"] is None and all(r["resumed"] == first for r in mine[1:]), mine
            else:
                assert mine[0]["action"] == "started", mine[0]
                assert all(r["action"] == "resumed" and r["thread_id"] == first for r in mine[1:]), mine
            priorities = [sent_priority(sent, r["prompt"]) for r in mine]
            assert priorities == sorted(priorities, key=RANK.__getitem__), priorities

    # Usage: each attempt carries what its transcript reported; /metrics sums the same.
    for task_id, (tokens_in, tokens_out, cost) in expected.items():
        attempt = rest(live_hub, dispatcher, "GET", f"/tasks/{task_id}")["attempts"][-1]
        assert (attempt["tokens_in"], attempt["tokens_out"]) == (tokens_in, tokens_out), attempt
        assert attempt["cost_usd"] == pytest.approx(cost) if cost is not None else attempt["cost_usd"] is None
    scrape = metrics.parse(httpx.get(f"{live_hub.url}/metrics", timeout=30).text)
    for alias in ("claude-1", "claude-2", "codex-1", "codex-2"):
        mine = [expected[t] for t, (a, _, _) in sent.items() if a == alias]
        tokens = metrics.series(scrape, "commhub_run_tokens_total")
        counted_in = sum(
            v for labels, v in tokens.items() if ("agent", alias) in labels and ("direction", "in") in labels
        )
        assert counted_in == sum(u[0] for u in mine)
        if alias.startswith("claude"):
            costs = metrics.series(scrape, "commhub_run_cost_usd_total")
            assert sum(v for labels, v in costs.items() if ("agent", alias) in labels) == pytest.approx(
                sum(u[2] for u in mine)
            )


def sent_priority(sent: dict[str, tuple[str, str, int]], prompt: str) -> str:
    n = int(prompt.split("\n")[0].split()[1])
    return next(priority for _, priority, m in sent.values() if m == n)


def claude_agent(claude_dir: Path, repo: Path, **extra) -> dict:
    return {
        "runtime": "claude",
        "repository": str(repo),
        "isolation": "worktree",
        "env": {"CLAUDE_STANDIN_DIR": str(claude_dir)},
        "options": {"cli_path": str(STANDINS / "claude_cli.py")},
        **extra,
    }


def test_a_run_past_its_budget_is_stopped_and_failed_with_its_usage(live_hub, dispatcher, worker, tmp_path):
    """The node stops a run whose reported usage passes the task's token budget; a run the runtime
    itself stops at the USD budget (the SDK's max_budget_usd) is failed the same way."""
    repo, claude_dir = git_repository(tmp_path / "repo"), tmp_path / "claude"
    node = start_node(live_hub, worker, tmp_path, {"claude-b": claude_agent(claude_dir, repo, concurrency=2)})
    try:
        usage = {
            "input_tokens": 400,
            "output_tokens": 20,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        }
        hangs = json.dumps({"scenario": "hang", "usage": usage})
        over_tokens = send(live_hub, dispatcher, "claude-b", f"spin\nclaude-standin: {hangs}", budget_tokens=50)
        capped = json.dumps({"scenario": "budget", "cost_usd": 0.07})
        over_usd = send(live_hub, dispatcher, "claude-b", f"spend\nclaude-standin: {capped}", budget_usd=0.05)
        rows = wait_finished(live_hub, dispatcher, [over_tokens, over_usd], within=60)
    finally:
        node.stop()
    for task_id in (over_tokens, over_usd):
        assert rows[task_id]["status"] == "failed", rows[task_id]
        assert rows[task_id]["result"].startswith("failed: budget exceeded"), rows[task_id]["result"]
    assert "budget 50 tokens" in rows[over_tokens]["result"] and "400 tokens in, 20 out" in rows[over_tokens]["result"]
    assert "budget $0.05" in rows[over_usd]["result"] and "$0.07" in rows[over_usd]["result"]
    attempt = rest(live_hub, dispatcher, "GET", f"/tasks/{over_tokens}")["attempts"][-1]
    assert (attempt["tokens_in"], attempt["tokens_out"]) == (400, 20), attempt
    assert not alive(over_tokens)  # the stopped CLI is gone


def test_a_tool_use_needing_permission_becomes_a_question_and_the_answer_decides(
    live_hub, dispatcher, worker, tmp_path
):
    repo, claude_dir = git_repository(tmp_path / "repo"), tmp_path / "claude"
    agent = claude_agent(claude_dir, repo, concurrency=2, options={"cli_path": str(STANDINS / "claude_cli.py")})
    node = start_node(live_hub, worker, tmp_path, {"claude-p": agent})
    asks = json.dumps({"scenario": "permission"})
    try:
        allowed = send(live_hub, dispatcher, "claude-p", f"build it\nclaude-standin: {asks}")
        question = answer_next_question(live_hub, dispatcher, allowed, "allow", options=("allow", "deny"))
        denied = send(live_hub, dispatcher, "claude-p", f"build it again\nclaude-standin: {asks}")
        answer_next_question(live_hub, dispatcher, denied, "deny", options=("allow", "deny"))
        rows = wait_finished(live_hub, dispatcher, [allowed, denied], within=60)
    finally:
        node.stop()
    assert question["question"].startswith("Claude wants to use Bash"), question
    assert rows[allowed]["status"] == "replied" and rows[denied]["status"] == "replied"
    log = json.loads((claude_dir / "claude-sessions.json").read_text())["log"]
    assert sorted(line for line in log if line.startswith("permission")) == [
        "permission Bash allowed",
        "permission Bash denied",
    ], log


def test_sigterm_drains_lets_short_runs_finish_and_fails_the_rest_with_a_retry_hint(
    live_hub, dispatcher, worker, tmp_path
):
    repo, log = git_repository(tmp_path / "repo"), tmp_path / "runs.log"
    node = start_node(live_hub, worker, tmp_path, {"cmd": command_agent(repo, log, concurrency=2)}, stop_grace=3)
    short = send(live_hub, dispatcher, "cmd", "short sleep 1.5")
    long = send(live_hub, dispatcher, "cmd", "long sleep 120")
    wait_for(lambda: running(live_hub, dispatcher, [short, long]), within=30, what="both running")
    node.signal(signal.SIGTERM)
    time.sleep(0.5)
    late = send(live_hub, dispatcher, "cmd", "sent while draining")
    assert node.stop(timeout=30) == 0
    rows = wait_finished(live_hub, dispatcher, [short, long], within=10)
    assert rows[short]["status"] == "replied", rows[short]
    assert rows[long]["status"] == "failed", rows[long]
    assert "node stopped (SIGTERM)" in rows[long]["result"] and "retry_task" in rows[long]["result"]
    assert task(live_hub, dispatcher, late)["status"] == "delivered"  # no new task once draining
    assert not alive(long)


def test_a_runtime_that_cannot_start_fails_its_task_and_the_node_goes_on(live_hub, dispatcher, worker, tmp_path):
    repo, log = git_repository(tmp_path / "repo"), tmp_path / "runs.log"
    broken = {**command_agent(repo, log), "command": [str(tmp_path / "no-such-agent")]}
    node = start_node(live_hub, worker, tmp_path, {"broken": broken, "fine": command_agent(repo, log)})
    try:
        lost = send(live_hub, dispatcher, "broken", "anything")
        rows = wait_finished(live_hub, dispatcher, [lost], within=30)
        after = send(live_hub, dispatcher, "fine", "still here")
        rows.update(wait_finished(live_hub, dispatcher, [after], within=30))
    finally:
        node.stop()
    assert rows[lost]["status"] == "failed", rows[lost]
    assert "the command runtime did not start" in rows[lost]["result"] and "no-such-agent" in rows[lost]["result"]
    assert rows[after]["status"] == "replied"
