"""The command line: help, and refusals that say what is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest
from commhub_agent.cli import main


def test_help_names_the_three_modes(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "channel" in out and "run" in out and "hook" in out and "COMMHUB_TOKEN" in out


def test_the_installed_command_answers_help():
    command = shutil.which("commhub-agent")
    argv = [command] if command else [sys.executable, "-m", "commhub_agent"]
    done = subprocess.run([*argv, "run", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "--concurrency" in done.stdout


def test_missing_token_is_refused_by_name(monkeypatch):
    monkeypatch.delenv("COMMHUB_TOKEN", raising=False)
    with pytest.raises(SystemExit) as exit_:
        main(["hook", "stop", "--alias", "coder", "--hub", "http://127.0.0.1:1"])
    assert "COMMHUB_TOKEN" in str(exit_.value.code)


def test_run_needs_a_command(monkeypatch):
    monkeypatch.setenv("COMMHUB_TOKEN", "ntok_x")
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--alias", "coder", "--hub", "http://127.0.0.1:1"])
    assert exit_.value.code == 2
    assert os.environ["COMMHUB_TOKEN"] == "ntok_x"


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
