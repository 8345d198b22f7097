"""Running `commhub-agent node` against a live hub in the tests: its config, its process, its stand-ins.

The stand-ins (tests/agent/standins/) replay transcripts in the formats the real tools emit; the
node drives them exactly as it drives the real tools (the SDK's `cli_path` for claude, `codex` on
PATH for codex, any program for command).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers.live import Agent, Hub, companion_command, companion_env, rest, wait_for

HERE = Path(__file__).parents[1] / "agent"
STANDINS = HERE / "standins"
FAKE_AGENT = HERE / "fake_agent.py"
FINISHED = ("replied", "failed", "cancelled", "expired")


def git_repository(path: Path) -> Path:
    """A small repository with one commit, as an agent's checkout."""
    path.mkdir(parents=True)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (
        ["init", "-q", "-b", "main"],
        ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "start"],
    ):
        subprocess.run(["git", *args], cwd=path, check=True, env=env)
    (path / "README").write_text("checkout\n")
    subprocess.run(["git", "add", "README"], cwd=path, check=True, env=env)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "readme"],
        cwd=path,
        check=True,
        env=env,
    )
    return path


def toml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)


def node_toml(hub: Hub, state: Path, agents: dict[str, dict[str, Any]], **node: Any) -> str:
    lines = ["[node]", f"hub = {json.dumps(hub.url)}", 'name = "test-node"', f"state_dir = {json.dumps(str(state))}"]
    lines += [f"{k} = {toml_value(v)}" for k, v in node.items()]
    for alias, settings in agents.items():
        options = settings.get("options", {})
        lines.append(f"\n[agents.{json.dumps(alias)}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in settings.items() if k != "options"]
        if options:
            lines.append(f"[agents.{json.dumps(alias)}.options]")
            lines += [f"{k} = {toml_value(v)}" for k, v in options.items()]
    return "\n".join(lines) + "\n"


def command_agent(repository: Path, log: Path, **extra: Any) -> dict[str, Any]:
    return {
        "runtime": "command",
        "command": [sys.executable, str(FAKE_AGENT)],
        "repository": str(repository),
        "isolation": "worktree",
        "env": {"FAKE_AGENT_LOG": str(log)},
        **extra,
    }


@dataclass
class NodeProcess:
    hub: Hub
    token: Agent
    config: Path
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> NodeProcess:
        self.process = subprocess.Popen(
            companion_command("node", "--config", str(self.config)),
            env=companion_env(self.hub, self.token, self.config.parent, **self.env),
            stdout=subprocess.DEVNULL,
            stderr=self.log.open("ab"),
        )
        return self

    def signal(self, signum: int) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    def stop(self, *, timeout: float = 60) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=10)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def send(hub: Hub, sender: Agent, alias: str, text: str, **extra: Any) -> str:
    reply = rest(hub, sender, "POST", "/tasks", json={"alias": alias, "task": text, "from_session": "lead", **extra})
    assert reply["ok"], reply
    return reply["task_id"]


def task(hub: Hub, agent: Agent, task_id: str) -> dict[str, Any]:
    return rest(hub, agent, "GET", f"/tasks/{task_id}")["task"]


def wait_finished(hub: Hub, agent: Agent, ids: list[str], *, within: float) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}

    def done() -> bool:
        for task_id in ids:
            if task_id not in rows or rows[task_id]["status"] not in FINISHED:
                rows[task_id] = task(hub, agent, task_id)
                if rows[task_id]["status"] not in FINISHED:
                    return False
        return True

    wait_for(done, within=within, what=f"{len(ids)} tasks finished", every=0.5)
    return rows


def runs(log: Path) -> dict[str, int]:
    """How many times each task ran, from fake_agent's log."""
    counts: dict[str, int] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        kind, task_id, *_ = line.split()
        if kind == "start":
            counts[task_id] = counts.get(task_id, 0) + 1
    return counts


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
