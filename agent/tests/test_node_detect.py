"""Finding the agent CLIs a machine has, and the starter node.toml written from them.

The CLIs here are shell scripts answering `--version` the way the real ones do: `claude --version`
prints "2.1.3 (Claude Code)" and `codex --version` "codex-cli 0.17.0" (see /work/shared/AGENT-CLIS.md);
the others print a bare version, fail, hang or say nothing, to cover each way a probe can end.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from commhub_agent.node.config import load_config
from commhub_agent.node.detect import UNKNOWN, cli_version, installed_runtimes, starter_config
from commhub_agent.node.runtime import ConfigError
from gitrepo import isolate_git, make_repo

FOUND = {"claude": "2.1.3 (Claude Code)", "codex": "0.17.0", "gemini": "0.9.0", "aider": None, "goose": None}


@pytest.fixture(autouse=True)
def _git(monkeypatch):
    isolate_git(monkeypatch)


SLEEP = shutil.which("sleep")  # the probes run with PATH holding the fake CLIs alone


def fake_cli(folder: Path, name: str, script: str) -> None:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n{script.replace('sleep', str(SLEEP))}\n")
    path.chmod(0o755)


def test_installed_runtimes_asks_every_cli_at_once(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    fake_cli(bin_dir, "claude", 'sleep 1; echo "2.1.3 (Claude Code)"')
    fake_cli(bin_dir, "codex", 'sleep 1; echo "codex-cli 0.17.0"')
    fake_cli(bin_dir, "gemini", "sleep 1; echo 0.9.0")
    fake_cli(bin_dir, "aider", r"sleep 1; printf '\033[1maider 0.86.1\033[0m\n'")
    fake_cli(bin_dir, "goose", "echo 'unknown flag' >&2; exit 2")
    fake_cli(bin_dir, "qwen", "exit 0")
    monkeypatch.setenv("PATH", str(bin_dir))
    started = time.monotonic()
    found = installed_runtimes()
    assert time.monotonic() - started < 3.0  # four one-second probes, side by side
    assert found["gemini"] == "0.9.0" and found["aider"] == "aider 0.86.1"
    assert found["goose"] == f"{UNKNOWN} (--version exited 2)" and found["qwen"] == UNKNOWN
    assert found["codex"] in ("0.17.0", "codex-cli 0.17.0")  # through the codex runtime, or the CLI itself
    assert found["claude"] is not None
    assert found["opencode"] is None and found["cursor-agent"] is None and found["copilot"] is None


def test_a_cli_that_hangs_costs_the_timeout_only(tmp_path, monkeypatch):
    fake_cli(tmp_path / "bin", "gemini", "sleep 30")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    started = time.monotonic()
    assert cli_version("gemini", timeout=0.3) == f"{UNKNOWN} (no answer to --version in 0.3 s)"
    assert time.monotonic() - started < 5
    assert cli_version("not-installed-anywhere") is None


def test_the_starter_lists_what_was_found_and_loads_once_its_repository_exists(tmp_path):
    repo = make_repo(tmp_path / "app")
    text = starter_config(FOUND, hub="http://127.0.0.1:8000", name="box", repository=str(repo))
    header = text.split("[node]")[0]
    assert '#   claude  2.1.3 (Claude Code)  Claude Code: runtime "claude"' in header
    assert (
        '#   gemini  0.9.0                Gemini CLI: no runtime of its own yet: a "command" agent can run it' in header
    )
    assert "# Not found: aider, goose." in header
    path = tmp_path / "node.toml"
    path.write_text(text)
    config = load_config(path, environ={})
    assert (config.hub, config.name) == ("http://127.0.0.1:8000", "box")
    assert sorted(config.agents) == ["box-claude", "box-codex"]
    for alias in ("box-claude", "box-codex"):
        agent = config.agents[alias]
        assert (agent.repository, agent.isolation, agent.cleanup, agent.session) == (
            repo,
            "worktree",
            "on_success",
            "alias",
        )
        assert agent.skills == ("python",) and agent.timeout is None and agent.budget_usd is None
    # The command example is there, commented out; uncommented it loads too.
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# [agents.box-script]"))
    block = [line[2:] if line.startswith("# ") else line for line in lines[start:]]
    path.write_text("\n".join(lines[:start] + block) + "\n")
    script = load_config(path, environ={}).agents["box-script"]
    assert (script.runtime, script.command, script.isolation) == ("command", ("python3", "agent.py"), "none")


def test_every_key_of_an_example_agent_says_what_it_does(tmp_path):
    text = starter_config(FOUND, hub=None, name="box")
    for line in text.split("[node]")[1].splitlines():
        assignment = line.removeprefix("# ").removeprefix("# ")
        if "=" in assignment.split("#")[0] and not assignment.startswith("#"):
            assert "  # " in assignment, f"no comment on: {line}"
    for key in ("runtime", "skills", "repository", "isolation", "cleanup", "concurrency", "timeout", "stall_after"):
        assert f"\n{key} = " in text or f"\n# {key} = " in text
    for key in ("session", "budget_usd", "budget_tokens", "env", "command", "stop_grace", "state_dir"):
        assert f"{key} = " in text


def test_a_starter_without_a_hub_takes_it_from_the_environment(tmp_path):
    make_repo(tmp_path / "home" / "src" / "project")
    text = starter_config({"codex": "0.17.0"}, hub=None, name="box")
    assert '# hub = "http://127.0.0.1:8000"' in text and "~/src/project" in text
    path = tmp_path / "node.toml"
    path.write_text(text)
    home = {"HOME": str(tmp_path / "home")}
    config = load_config(path, environ={**home, "COMMHUB_URL": "http://hub:8000"})
    assert config.hub == "http://hub:8000" and list(config.agents) == ["box-codex"]
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ=home)
    assert caught.value.key == "node.hub"


def test_with_no_cli_found_the_command_example_is_the_agent(tmp_path):
    make_repo(tmp_path / "app")
    text = starter_config(
        {"claude": None, "codex": None}, hub="http://h:1", name="a b", repository=str(tmp_path / "app")
    )
    assert "# No agent CLI found on this machine" in text and "# Not found: claude, codex." in text
    path = tmp_path / "node.toml"
    path.write_text(text)
    config = load_config(path, environ={})
    assert list(config.agents) == ["a b-script"] and config.agents["a b-script"].runtime == "command"
    assert config.name == "a b"


def test_the_starter_config_says_how_to_bind_the_nodes_token():
    text = starter_config({"claude": "2.1.0", "codex": "0.17.0"}, hub=None, name="box")

    assert "python manage.py create_token --network NETWORK --name box --alias box-claude,box-codex" in text
    assert "or match a pattern of it ('box-*')" in text
