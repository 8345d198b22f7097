"""The command line: help, and refusals that say what is missing."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest
from commhub_agent.cli import main
from gitrepo import isolate_git, make_repo


def test_help_names_the_four_modes(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "node" in out and "channel" in out and "run" in out and "hook" in out and "COMMHUB_TOKEN" in out


def test_the_installed_command_answers_help():
    command = shutil.which("commhub-agent")
    argv = [command] if command else [sys.executable, "-m", "commhub_agent"]
    done = subprocess.run([*argv, "run", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "--concurrency" in done.stdout


def test_missing_token_is_refused_by_name(monkeypatch):
    monkeypatch.delenv("COMMHUB_TOKEN", raising=False)
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--alias", "coder", "--hub", "http://127.0.0.1:1", "--", "true"])
    assert "COMMHUB_TOKEN" in str(exit_.value.code)


def _companion(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    command = shutil.which("commhub-agent")
    argv = [command] if command else [sys.executable, "-m", "commhub_agent"]
    clean = {k: v for k, v in os.environ.items() if not k.startswith("COMMHUB_")}
    return subprocess.run([*argv, *args], input="{}", capture_output=True, text=True, timeout=60, env={**clean, **env})


HUB = {"COMMHUB_URL": "http://127.0.0.1:1", "COMMHUB_TOKEN": "ntok_x"}


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["hook", "stop"], HUB, "--alias"),
        (["hook", "stop", "--alias", "coder"], {"COMMHUB_TOKEN": "ntok_x"}, "COMMHUB_URL"),
        (["hook", "stop", "--alias", "coder"], {"COMMHUB_URL": "http://127.0.0.1:1"}, "COMMHUB_TOKEN"),
        (["hook", "stop", "--alias", "coder", "--bogus"], HUB, "--bogus"),
        (["hook", "--alias", "coder"], HUB, "event"),
        (["hook", "start", "--alias", "coder"], HUB, "start"),
        (["hook", "stop", "--alias", "coder", "--state-dir"], HUB, "--state-dir"),
    ],
    ids=["no-alias", "no-url", "no-token", "unknown-option", "no-event", "unknown-event", "option-without-value"],
)
def test_a_misconfigured_stop_hook_lets_the_session_stop(args, env, named, tmp_path):
    # Exit status 2 from a Stop hook means "block and keep going" to Claude Code: a hook that cannot
    # work must never trap the session. Exit 0, nothing on stdout, one line on stderr saying why.
    done = _companion(*args, **env, COMMHUB_AGENT_STATE_DIR=str(tmp_path))
    assert done.returncode == 0, done
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert named in done.stderr and "letting the session stop" in done.stderr


class _InboxWithATask(http.server.BaseHTTPRequestHandler):
    """A stand-in hub whose get_inbox holds one task: the hook then writes its state."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        outcome = {"ok": True, "messages": [{"id": "m1", "type": "task", "task_id": "t1", "content": "fix it"}]}
        result = {"content": [{"type": "text", "text": json.dumps(outcome)}], "structuredContent": outcome}
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_stop_hook_that_cannot_keep_state_lets_the_session_stop(tmp_path):
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the state directory should be")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _InboxWithATask)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        done = _companion(
            "hook",
            "stop",
            "--alias",
            "coder",
            "--state-dir",
            str(blocked / "state"),
            COMMHUB_URL=url,
            COMMHUB_TOKEN="ntok_x",
        )
    finally:
        server.shutdown()
    assert (done.returncode, done.stdout, len(done.stderr.splitlines())) == (0, "", 1), done
    assert "letting the session stop" in done.stderr


def test_the_runner_says_where_it_runs_and_what_in_one_line(tmp_path):
    # A hub that is not there: the runner keeps retrying, but its first word is the start line.
    errors = tmp_path / "stderr"
    env = {**os.environ, "COMMHUB_TOKEN": "ntok_x", "COMMHUB_AGENT_STATE_DIR": str(tmp_path)}
    argv = ["run", "--alias", "coder", "--hub", "http://127.0.0.1:1", "--concurrency", "2", "--poll", "1"]
    with errors.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "commhub_agent", *argv, "--", "codex", "exec", "fix it"], env=env, stderr=sink
        )
    try:
        deadline = time.monotonic() + 60
        while errors.read_text().count("\n") < 2 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.1)
    finally:
        process.kill()
        process.wait(timeout=10)
    first, *rest = errors.read_text().splitlines()
    assert first == (
        "commhub-agent run: started: hub http://127.0.0.1:1, alias coder, concurrency 2, command codex exec 'fix it'"
    )
    assert not any(line.startswith("commhub-agent run: started") for line in rest)


def test_a_bad_node_config_is_refused_at_start_with_its_file_key_and_reason(tmp_path):
    config = tmp_path / "node.toml"
    config.write_text(
        '[node]\nhub = "http://127.0.0.1:1"\n[agents.coder]\nruntime = "command"\n'
        'command = ["true"]\nisolation = "tree"\n'
    )
    done = _companion("node", "--config", str(config), COMMHUB_TOKEN="ntok_x")
    assert done.returncode == 2, done
    assert done.stderr.strip() == (
        f'commhub-agent node: {config}: agents.coder.isolation: must be one of worktree, dir, none (got "tree")'
    )


def test_a_node_without_its_token_is_refused(tmp_path):
    config = tmp_path / "node.toml"
    config.write_text('[node]\nhub = "http://127.0.0.1:1"\n[agents.coder]\nruntime = "command"\ncommand = ["true"]\n')
    done = _companion("node", "--config", str(config))
    assert done.returncode == 2 and "COMMHUB_TOKEN" in done.stderr, done


def test_node_init_writes_a_starter_config_that_loads_and_never_overwrites(tmp_path, monkeypatch):
    isolate_git(monkeypatch)
    from commhub_agent.node.config import load_config

    config = tmp_path / "node.toml"
    done = _companion("node", "init", "--config", str(config), "--hub", "http://127.0.0.1:1")
    assert done.returncode == 0, done
    assert f"wrote {config}" in done.stdout and "agent CLIs found" in done.stdout
    text = config.read_text()
    assert text.startswith("# node.toml") and 'hub = "http://127.0.0.1:1"' in text
    repository = make_repo(tmp_path / "project")
    config.write_text(text.replace('"~/src/project"', f'"{repository}"'))
    assert load_config(config).agents  # the starter loads once its folder exists
    again = _companion("node", "init", "--config", str(config))
    assert again.returncode == 2 and "exists" in again.stderr and "--force" in again.stderr, again
