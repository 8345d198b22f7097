"""README's agent set-up, read as a new user follows it: names that do not collide, commands that
exist, a node.toml the node accepts, service files that let it drain. tests/e2e/agent_clis runs the
same blocks against the real Claude Code and Codex CLIs."""

from __future__ import annotations

import json
import os
import plistlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers.node import git_repository

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "agent"))
from commhub_agent.node.config import DEFAULT_STOP_GRACE, load_config

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
UNIT = ROOT / "docs" / "commhub-agent-node.service"
PLIST = ROOT / "docs" / "com.commhub.agent-node.plist"

# What a stop takes besides stop_grace: stopping the runs (TERM, 5 s, KILL, 5 s for a claude run) and
# the last reports (10 s). A service manager that SIGKILLs sooner cuts the drain short.
STOP_BEYOND_GRACE = 20


def _section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def _claude_http_servers() -> set[str]:
    return set(re.findall(r"claude mcp add --transport http (\S+)", README))


def _claude_channel_servers() -> set[str]:
    section = _section("Run agents")
    added = set(re.findall(r"claude mcp add (\S+) .*?-- commhub-agent channel", section, flags=re.DOTALL))
    for block in _blocks(section, "json"):
        servers = json.loads(block).get("mcpServers", {})
        added |= {name for name, server in servers.items() if "channel" in server.get("args", [])}
    return added


def test_the_channel_and_the_http_server_have_different_names() -> None:
    # One name in two scopes: Claude Code reports [Conflicting scopes] and drops one of them.
    http, channel = _claude_http_servers(), _claude_channel_servers()
    assert http and channel
    assert not http & channel, f"{sorted(http & channel)} names both the HTTP server and the channel"


def test_every_channel_load_flag_names_a_channel_server() -> None:
    loaded = set(re.findall(r"--dangerously-load-development-channels server:([\w-]+)", README))
    assert loaded and loaded <= _claude_channel_servers()


def test_the_install_puts_the_companion_on_the_path_claude_code_sees() -> None:
    install = _blocks(_section("Run agents"), "sh")[0]
    venv = re.search(r"python3 -m venv (\S+) && \1/bin/pip install \./agent", install)
    assert venv, install
    assert f'export PATH="{venv.group(1).replace("~", "$HOME")}/bin:$PATH"' in install


def test_hooks_are_told_to_read_claude_codes_own_environment() -> None:
    hooks = _section("Run agents").split("the Stop hook.**", 1)[1].split("**Codex", 1)[0]
    assert "COMMHUB_URL" in hooks and "COMMHUB_TOKEN" in hooks and "reaches only the server" in hooks


def test_codex_exec_in_a_fresh_workdir_skips_the_git_repo_check() -> None:
    # `codex exec` refuses a folder that is not a trusted git repository, and --workdir makes a new one.
    lines = [line for line in README.splitlines() if "--workdir" in line and "codex exec" in line]
    assert lines and all("--skip-git-repo-check" in line for line in lines)


def test_the_node_toml_example_is_a_config_the_node_accepts(tmp_path) -> None:
    (block,) = [b for b in _blocks(_section("Run agents"), "toml") if b.startswith("[node]\n")]
    # Its repositories, ~/src/..., as git repositories under a home of its own.
    for repository in set(re.findall(r'^repository = "~/(\S+)"', block, flags=re.MULTILINE)):
        git_repository(tmp_path / repository)
    (tmp_path / "node.toml").write_text(block)

    config = load_config(tmp_path / "node.toml", environ={"HOME": str(tmp_path)})

    # One agent of each runtime, as the text around it describes them.
    assert sorted(agent.runtime for agent in config.agents.values()) == ["claude", "codex", "command"]
    assert {agent.isolation for agent in config.agents.values()} >= {"worktree", "dir"}


def _unit() -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for line in UNIT.read_text().splitlines():
        if "=" in line and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            values.setdefault(key.strip(), []).append(value.strip())
    return values


def test_the_systemd_unit_drains_the_node_before_it_kills_it() -> None:
    unit = _unit()
    assert re.search(r"/commhub-agent node --config \S+/node\.toml$", unit["ExecStart"][0])
    assert unit["KillSignal"] == ["SIGTERM"]
    # control-group (the default) would SIGTERM every run at once, with no grace for them.
    assert unit["KillMode"] == ["mixed"]
    assert float(unit["TimeoutStopSec"][0]) > DEFAULT_STOP_GRACE + STOP_BEYOND_GRACE
    assert unit["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    assert unit["Restart"] == ["on-failure"]
    assert unit["EnvironmentFile"] and "COMMHUB_TOKEN" in UNIT.read_text()


def test_the_systemd_unit_passes_systemd_analyze(tmp_path) -> None:
    if shutil.which("systemd-analyze") is None:
        return  # macOS and containers without systemd: the structure test above still holds
    # %h is the home: give it the executable ExecStart names, so verify checks everything else.
    binary = tmp_path / ".local" / "bin" / "commhub-agent"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    done = subprocess.run(
        ["systemd-analyze", "verify", str(UNIT)],
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(tmp_path)},
        timeout=60,
    )
    said = [line for line in (done.stdout + done.stderr).splitlines() if UNIT.name in line]
    assert not said, said


def test_the_launchd_plist_drains_the_node_before_it_kills_it() -> None:
    with PLIST.open("rb") as handle:
        plist = plistlib.load(handle)
    assert plist["ProgramArguments"][0].endswith("/commhub-agent")
    assert plist["ProgramArguments"][1:3] == ["node", "--config"]
    assert "COMMHUB_TOKEN" in plist["EnvironmentVariables"]
    assert plist["ExitTimeOut"] > DEFAULT_STOP_GRACE + STOP_BEYOND_GRACE  # launchd's own default is 20 s
    assert plist["KeepAlive"] and plist["StandardErrorPath"]


def test_readme_links_the_service_files_and_installs_them() -> None:
    section = _section("Run agents")
    for path in (UNIT, PLIST):
        name = path.relative_to(ROOT).as_posix()
        assert f"]({name})" in section and f"cp {name} " in section
