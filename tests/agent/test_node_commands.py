"""Commands to a node (issue 28 item 2) against a live hub and a live `commhub-agent node` with the
stand-in runtimes: each command round-trips sent -> done through the node's feeds, and its effect is
seen on the node (a stopped process is gone, paused intake takes no task, a restarted session is
fresh, a tail shows the run's last lines with its secrets redacted); cancel_task stops a run too."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import pytest
from django.core.management import call_command

from hub_agents.services import token_create
from tests.helpers.live import AGENT_DIR, Agent, rest, wait_for
from tests.helpers.node import (
    STANDINS,
    NodeProcess,
    alive,
    command_agent,
    git_repository,
    node_toml,
    send,
    task,
    wait_finished,
)

sys.path.insert(0, str(AGENT_DIR))
from commhub_agent.node.commands import REDACTED, Redactor, Tails

# A run that prints lines, secrets among them, then works (sleeps) until it is stopped.
CHATTY = """
import os, sys, time
print("progress: 10 starting", flush=True)
for n in range(1, 31):
    print(f"line {n}", flush=True)
print("calling with Authorization: Bearer abcdef123456789", flush=True)
print("key sk-live1234567890abcdef", flush=True)
print("deploy token " + os.environ["DEPLOY_TOKEN"], flush=True)
print("last line", flush=True)
time.sleep(120)
"""
DEPLOY_TOKEN = "hunter2-deploy-secret"


@pytest.fixture
def operator(network) -> Agent:
    """An owner's token: commands are owners' and admins'."""
    return Agent(token_create(network=network, role="owner", name="operator")[1])


def start_node(hub, token, tmp_path, agents) -> NodeProcess:
    config = tmp_path / "node.toml"
    config.write_text(node_toml(hub, tmp_path / "state", agents))
    node = NodeProcess(hub, token, config, tmp_path / "node.log").start()
    wait_for(lambda: node_row(hub, token) is not None, within=30, what="the node's first report")
    return node


def node_row(hub, agent) -> dict[str, Any] | None:
    return next((n for n in rest(hub, agent, "GET", "/nodes")["nodes"] if n["node_id"] == "test-node"), None)


def command(hub, operator, **fields: Any) -> dict[str, Any]:
    """Sends a command to the test node and waits for its answer (done, failed or expired)."""
    reply = rest(hub, operator, "POST", "/nodes/commands", json={"node_id": "test-node", **fields})
    assert reply["ok"], reply
    assert reply["command"]["status"] == "sent"
    command_id = reply["command"]["command_id"]

    def answered() -> dict[str, Any] | None:
        (row,) = rest(hub, operator, "GET", "/nodes/commands", params={"command_id": command_id})["commands"]
        return row if row["status"] != "sent" else None

    return wait_for(answered, within=30, what=f"the node's answer to {fields}", every=0.2)


def running(hub, agent, task_id: str) -> bool:
    return task(hub, agent, task_id)["status"] == "running"


@pytest.mark.django_db(transaction=True)
def test_tail_redacts_stop_kills_and_cancel_stops(live_hub, dispatcher, worker, operator, tmp_path):
    repo, log = git_repository(tmp_path / "repo"), tmp_path / "runs.log"
    script = tmp_path / "chatty.py"
    script.write_text(CHATTY)
    chatty = command_agent(repo, log, concurrency=2, command=[sys.executable, str(script)])
    chatty["env"] = {"DEPLOY_TOKEN": DEPLOY_TOKEN}
    node = start_node(live_hub, worker, tmp_path, {"chatty": chatty})
    try:
        stopped = send(live_hub, dispatcher, "chatty", "talk, then work")
        wait_for(lambda: running(live_hub, dispatcher, stopped), within=30, what="the run")
        wait_for(lambda: alive(stopped), within=10, what="its process")
        time.sleep(1)  # its lines are printed at once; the node reads them as they come

        tail = command(live_hub, operator, kind="tail", task_id=stopped, value=5)
        unknown = command(live_hub, operator, kind="tail", task_id="task_nowhere")
        stop = command(live_hub, operator, kind="stop", task_id=stopped)
        wait_for(lambda: not alive(stopped), within=30, what="the stopped run's process gone")
        (row,) = wait_finished(live_hub, dispatcher, [stopped], within=30).values()

        cancelled = send(live_hub, dispatcher, "chatty", "talk, then work, then be cancelled")
        wait_for(lambda: running(live_hub, dispatcher, cancelled) and alive(cancelled), within=30, what="the run")
        assert rest(live_hub, dispatcher, "POST", f"/tasks/{cancelled}/cancel", json={})["ok"]
        wait_for(lambda: not alive(cancelled), within=30, what="the cancelled run's process gone")
    finally:
        node.stop()
    print(node.output())
    assert tail["status"] == "done", tail
    assert tail["lines"] == [
        "line 30",
        f"calling with Authorization: {REDACTED}",
        f"key {REDACTED}",
        f"deploy token {REDACTED}",
        "last line",
    ], tail
    assert DEPLOY_TOKEN not in json.dumps(tail) and "sk-live" not in json.dumps(tail)
    assert unknown["status"] == "failed" and "no run of task task_nowhere" in unknown["reason"], unknown
    assert stop["status"] == "done", stop
    assert row["status"] == "failed" and "by an operator's command" in row["result"], row
    assert task(live_hub, dispatcher, cancelled)["status"] == "cancelled"


@pytest.mark.django_db(transaction=True)
def test_pause_holds_intake_resume_releases_it_concurrency_changes_and_drain_ends_the_node(
    live_hub, dispatcher, worker, operator, tmp_path
):
    repo, log = git_repository(tmp_path / "repo"), tmp_path / "runs.log"
    node = start_node(live_hub, worker, tmp_path, {"cmd": command_agent(repo, log, concurrency=1)})
    try:
        pause = command(live_hub, operator, kind="pause", alias="cmd")
        held = send(live_hub, dispatcher, "cmd", "quick")
        time.sleep(3)
        held_status = task(live_hub, dispatcher, held)["status"]
        shown = wait_for(
            lambda: next(a for a in node_row(live_hub, operator)["agents"] if a["alias"] == "cmd").get("paused"),
            within=10,
            what="the node reporting cmd paused",
        )
        resume = command(live_hub, operator, kind="resume", alias="cmd")
        wait_finished(live_hub, dispatcher, [held], within=30)

        wider = command(live_hub, operator, kind="set_concurrency", alias="cmd", value=2)
        pair = [send(live_hub, dispatcher, "cmd", f"pair {n} sleep 6") for n in (1, 2)]
        wait_for(lambda: all(running(live_hub, dispatcher, t) for t in pair), within=30, what="two at once")
        drain = command(live_hub, operator, kind="drain")
        late = send(live_hub, dispatcher, "cmd", "after the drain")
        rows = wait_finished(live_hub, dispatcher, pair, within=60)
        assert node.process is not None
        code = node.process.wait(timeout=30)  # drained: the node ends once its runs are done
    finally:
        node.stop()
    print(node.output())
    assert [c["status"] for c in (pause, resume, wider, drain)] == ["done"] * 4
    assert held_status == "delivered" and shown is True
    assert all(row["status"] == "replied" for row in rows.values()), rows
    assert code == 0 and task(live_hub, dispatcher, late)["status"] == "delivered"


@pytest.mark.django_db(transaction=True)
def test_restart_session_makes_the_next_task_start_a_fresh_session(live_hub, dispatcher, worker, operator, tmp_path):
    claude_dir = tmp_path / "claude"
    agent = {
        "runtime": "claude",
        "repository": str(git_repository(tmp_path / "repo")),
        "isolation": "worktree",
        "env": {"CLAUDE_STANDIN_DIR": str(claude_dir)},
        "options": {"cli_path": str(STANDINS / "claude_cli.py")},
    }
    node = start_node(live_hub, worker, tmp_path, {"claude-1": agent})
    try:
        first = [send(live_hub, dispatcher, "claude-1", f"task {n}") for n in (1, 2)]
        for task_id in first:  # one after the other: the second resumes the first's session
            wait_finished(live_hub, dispatcher, [task_id], within=60)
        restart = command(live_hub, operator, kind="restart_session", alias="claude-1")
        fresh = send(live_hub, dispatcher, "claude-1", "task 3")
        rows = wait_finished(live_hub, dispatcher, [*first, fresh], within=60)
    finally:
        node.stop()
    print(node.output())
    assert restart["status"] == "done", restart
    assert all(row["status"] == "replied" for row in rows.values()), rows
    ran = {r["prompt"].split("\n")[0]: r for r in json.loads((claude_dir / "claude-sessions.json").read_text())["runs"]}
    assert ran["task 1"]["resumed"] is None and ran["task 2"]["resumed"] == ran["task 1"]["session"]
    assert ran["task 3"]["resumed"] is None and ran["task 3"]["session"] != ran["task 1"]["session"]


def test_a_tail_redacts_the_hub_token_keys_bearers_and_secret_environment_values():
    redact = Redactor.for_run({"OPENAI_API_KEY": "abc123secret", "HOME": "/home/someone"}, "ntok_hubtoken123456")
    tails = Tails()
    lines = tails.open("task_1", redact)
    for line in (
        "hub ntok_hubtoken123456 and another ntok_Zz9-otherother",
        "api abc123secret at /home/someone",
        "Authorization: bearer eyJhbGciOi.x.y",
        "sk-proj-0123456789",
    ):
        lines.append(line + "\n")

    assert tails.last("task_1", 3) == [
        f"api {REDACTED} at /home/someone",
        f"Authorization: {REDACTED}",
        REDACTED,
    ]
    assert tails.last("task_1", 10)[0] == f"hub {REDACTED} and another {REDACTED}"
    assert tails.last("task_2", 5) is None


@pytest.mark.django_db(transaction=True)
def test_a_command_to_a_node_gone_silent_expires_saying_so(hub_server, worker, operator, tmp_path):
    hub = hub_server({"COMMHUB_NODE_COMMAND_ACK_SECONDS": "2", "COMMHUB_RATE_LIMIT_PREFIX": f"nc-{tmp_path.name}"})
    repo, log = git_repository(tmp_path / "repo"), tmp_path / "runs.log"
    node = start_node(hub, worker, tmp_path, {"cmd": command_agent(repo, log)})
    node.kill()  # gone without a word: the hub still counts it online for now

    reply = rest(hub, operator, "POST", "/nodes/commands", json={"node_id": "test-node", "kind": "drain"})
    assert reply["ok"] and reply["command"]["status"] == "sent", reply
    time.sleep(3)
    call_command("sweep", "--once", verbosity=0)

    (row,) = rest(hub, operator, "GET", "/nodes/commands", params={"command_id": reply["command"]["command_id"]})[
        "commands"
    ]
    assert row["status"] == "expired", row
    assert "did not acknowledge" in row["reason"] and "offline" in row["reason"], row
