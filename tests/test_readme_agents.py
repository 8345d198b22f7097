"""README's agent set-up, read as a new user follows it: names that do not collide, commands that
exist. tests/e2e/agent_clis runs the same blocks against the real Claude Code and Codex CLIs."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


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
