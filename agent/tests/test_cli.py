"""The command line: help, and refusals that say what is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

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
