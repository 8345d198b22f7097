"""Real git repositories for tests, cut off from the machine's git configuration and identity."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

# Who made the repository's first commit; the node's own commits must never borrow it.
TEST_AUTHOR = ("tester", "tester@example.com")


def isolate_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """No global or system config, no identity from the environment, and no guessing one from the host
    name (user.useConfigOnly): a commit works only if its caller names its author itself."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "user.useConfigOnly")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "true")
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(name, raising=False)


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A git work tree at `path` on branch main with one commit holding `files`."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--quiet", "-b", "main")
    for name, text in (files or {"README.md": "hello\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(
        path,
        "-c",
        f"user.name={TEST_AUTHOR[0]}",
        "-c",
        f"user.email={TEST_AUTHOR[1]}",
        "commit",
        "--quiet",
        "-m",
        "init",
    )
    return path
