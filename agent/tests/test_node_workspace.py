"""Per-task workspaces on real git repositories: worktrees, fresh directories, cleanup and pruning."""

from __future__ import annotations

import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from commhub_agent.node.config import AgentConfig
from commhub_agent.node.workspace import (
    DIFFSTAT_MAX,
    branch_name,
    close_workspace,
    open_workspace,
    path_component,
    prepare_spare,
    prune_workspaces,
)
from gitrepo import git, isolate_git, make_repo


@pytest.fixture(autouse=True)
def _git(monkeypatch):
    isolate_git(monkeypatch)


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo", {"README.md": "hello\n", "src/app.py": "print(1)\n"})


def agent(repository: Path | None, **overrides) -> AgentConfig:
    fields = {
        "alias": "builder",
        "runtime": "command",
        "skills": (),
        "repository": repository,
        "isolation": "worktree",
        "cleanup": "on_success",
        "keep_days": None,
        "concurrency": 2,
        "timeout": None,
        "stall_after": 600.0,
        "session": "task",
        "budget_usd": None,
        "budget_tokens": None,
        "env": {},
        "command": ("true",),
        "options": {},
    }
    return AgentConfig(**{**fields, **overrides})


def test_the_machine_has_no_git_identity_here(repo):
    # What close_workspace's commit is tested against: a plain commit is refused for want of an author.
    (repo / "x").write_text("x")
    git(repo, "add", "x")
    done = subprocess.run(["git", "-C", str(repo), "commit", "-m", "x"], capture_output=True, text=True)
    assert done.returncode != 0 and "Author identity unknown" in done.stderr


def test_two_tasks_get_their_own_worktree_and_branch(repo, tmp_path):
    builder = agent(repo)
    root = tmp_path / "node"
    one = open_workspace(builder, task_id="t1", root=root)
    two = open_workspace(builder, task_id="t2", root=root)
    assert one.path == root / "worktrees" / "builder" / "t1" and two.path == root / "worktrees" / "builder" / "t2"
    assert (one.branch, two.branch) == ("commhub/builder/t1", "commhub/builder/t2")
    assert git(one.path, "rev-parse", "--abbrev-ref", "HEAD") == "commhub/builder/t1"
    assert git(two.path, "rev-parse", "--abbrev-ref", "HEAD") == "commhub/builder/t2"
    head = git(repo, "rev-parse", "HEAD")
    assert one.base == two.base == head
    (one.path / "only-in-one.txt").write_text("mine\n")
    (one.path / "README.md").write_text("changed in one\n")
    assert not (two.path / "only-in-one.txt").exists()
    assert (two.path / "README.md").read_text() == "hello\n" and (repo / "README.md").read_text() == "hello\n"


def test_close_commits_what_the_run_left_and_names_branch_head_and_diffstat(repo, tmp_path):
    builder = agent(repo)
    ws = open_workspace(builder, task_id="t1", root=tmp_path / "node")
    (ws.path / "new.txt").write_text("a\nb\n")
    (ws.path / "src" / "app.py").write_text("print(2)\n")
    (ws.path / "README.md").unlink()
    result = close_workspace(ws, builder, ok=True)
    head = git(repo, "rev-parse", "refs/heads/commhub/builder/t1")
    assert result["branch"] == "commhub/builder/t1" and result["head"] == head and result["base"] == ws.base
    assert head != ws.base
    assert git(repo, "log", "-1", "--format=%an <%ae>|%cn|%s", head) == (
        "commhub-agent <commhub-agent@localhost>|commhub-agent|commhub: task t1"
    )
    lines = result["diffstat"].splitlines()
    assert lines[-1] == "3 files changed, 3 insertions(+), 2 deletions(-)"
    assert sorted(line.split("|")[0].strip() for line in lines[:-1]) == ["README.md", "new.txt", "src/app.py"]
    # cleanup on_success and ok: the worktree is gone, its branch stays
    assert not ws.path.exists() and "workspace" not in result
    assert str(ws.path) not in git(repo, "worktree", "list")
    assert git(repo, "show", f"{head}:new.txt") == "a\nb"


def test_a_run_that_committed_itself_and_left_nothing_is_reported_too(repo, tmp_path):
    builder = agent(repo)
    ws = open_workspace(builder, task_id="t1", root=tmp_path / "node")
    (ws.path / "a.txt").write_text("a\n")
    git(ws.path, "add", "a.txt")
    git(ws.path, "-c", "user.name=agent", "-c", "user.email=agent@example.com", "commit", "-q", "-m", "agent's own")
    result = close_workspace(ws, builder, ok=True)
    assert git(repo, "log", "-1", "--format=%an|%s", result["head"]) == "agent|agent's own"
    assert result["diffstat"].splitlines()[-1] == "1 file changed, 1 insertion(+)"
    untouched = open_workspace(builder, task_id="t2", root=tmp_path / "node")
    result = close_workspace(untouched, builder, ok=True)
    assert result["head"] == untouched.base and result["diffstat"] == "no changes"


@pytest.mark.parametrize(("cleanup", "ok", "kept"), [("on_success", False, True), ("never", True, True)])
def test_cleanup_policy_keeps_a_failed_or_never_cleaned_worktree(repo, tmp_path, cleanup, ok, kept):
    builder = agent(repo, cleanup=cleanup)
    ws = open_workspace(builder, task_id="t1", root=tmp_path / "node")
    (ws.path / "half.txt").write_text("half\n")
    result = close_workspace(ws, builder, ok=ok)
    assert ws.path.exists() is kept and result["workspace"] == str(ws.path)
    assert git(ws.path, "status", "--porcelain") == ""  # committed all the same
    assert result["head"] == git(repo, "rev-parse", "refs/heads/commhub/builder/t1")


def test_a_retry_carries_on_from_the_earlier_attempt(repo, tmp_path):
    builder = agent(repo)
    root = tmp_path / "node"
    first = open_workspace(builder, task_id="t1", root=root)
    (first.path / "step1.txt").write_text("1\n")
    close_workspace(first, builder, ok=False)  # kept: a failure under on_success
    # meanwhile the repository moves on
    (repo / "later.txt").write_text("later\n")
    git(repo, "add", "later.txt")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "later")
    again = open_workspace(builder, task_id="t1", root=root)
    assert again.path == first.path and (again.path / "step1.txt").exists()
    assert again.base == first.base  # the fork point: the diffstat covers every attempt
    (again.path / "step2.txt").write_text("2\n")
    result = close_workspace(again, builder, ok=True)
    assert not again.path.exists()
    assert result["diffstat"].splitlines()[-1] == "2 files changed, 2 insertions(+)"
    # a third attempt after the worktree was removed checks the kept branch out again
    third = open_workspace(builder, task_id="t1", root=root)
    assert third.branch == "commhub/builder/t1" and (third.path / "step2.txt").exists()
    assert third.base == first.base
    # a worktree deleted by hand is forgotten rather than blocking its branch
    import shutil

    shutil.rmtree(third.path)
    fourth = open_workspace(builder, task_id="t1", root=root)
    assert (fourth.path / "step1.txt").exists()


def test_concurrent_opens_on_one_repository_all_succeed(repo, tmp_path):
    builder = agent(repo)
    with ThreadPoolExecutor(max_workers=6) as pool:
        spaces = list(pool.map(lambda n: open_workspace(builder, task_id=f"t{n}", root=tmp_path / "node"), range(6)))
    assert len({ws.path for ws in spaces}) == 6
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda ws: close_workspace(ws, builder, ok=True), spaces))
    assert [r["branch"] for r in results] == [f"commhub/builder/t{n}" for n in range(6)]
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_subfolder_repository_runs_in_the_same_subfolder_of_the_worktree(repo, tmp_path):
    builder = agent(repo / "src")
    ws = open_workspace(builder, task_id="t1", root=tmp_path / "node")
    assert ws.path == tmp_path / "node" / "worktrees" / "builder" / "t1" / "src"
    assert (ws.path / "app.py").exists()
    (ws.path / "more.py").write_text("x\n")
    result = close_workspace(ws, builder, ok=True)
    assert "src/more.py" in result["diffstat"]


def test_the_diffstat_is_bounded_and_keeps_its_summary(repo, tmp_path):
    builder = agent(repo)
    ws = open_workspace(builder, task_id="t1", root=tmp_path / "node")
    for n in range(300):
        (ws.path / f"a-rather-long-file-name-for-the-diffstat-{n:03}.txt").write_text("x\n")
    diffstat = close_workspace(ws, builder, ok=True)["diffstat"]
    assert len(diffstat) <= DIFFSTAT_MAX
    lines = diffstat.splitlines()
    assert lines[-1] == "300 files changed, 300 insertions(+)" and lines[-2].endswith("more files")
    assert "a-rather-long-file-name-for-the-diffstat-000.txt" in lines[0]


@pytest.mark.parametrize(
    "alias", ["builder", ".hidden", "..", "a b", "x.lock", "a..b", "trail.", "代码", "@", "a" * 200]
)
def test_any_alias_gives_a_valid_branch_and_a_folder_inside_the_root(alias, repo, tmp_path):
    name = branch_name(alias, "t-1")
    assert subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True).returncode == 0
    assert name.startswith("commhub/") and name.endswith("/t-1")
    part = path_component(alias)
    assert part not in (".", "..") and "/" not in part and len(part) <= 200
    builder = agent(repo, alias=alias)
    ws = open_workspace(builder, task_id="t-1", root=tmp_path / "node")
    assert ws.path.parent.parent == tmp_path / "node" / "worktrees" and ws.branch == name
    assert close_workspace(ws, builder, ok=True)["branch"] == name


def test_dir_isolation_gives_a_fresh_empty_folder_each_attempt(tmp_path):
    scratch = agent(None, isolation="dir")
    ws = open_workspace(scratch, task_id="t1", root=tmp_path / "node")
    assert ws.path == tmp_path / "node" / "dirs" / "builder" / "t1" and list(ws.path.iterdir()) == []
    (ws.path / "left.txt").write_text("x")
    assert close_workspace(ws, scratch, ok=False) == {} and ws.path.exists()
    again = open_workspace(scratch, task_id="t1", root=tmp_path / "node")
    assert list(again.path.iterdir()) == []
    assert close_workspace(again, scratch, ok=True) == {} and not again.path.exists()
    never = agent(None, isolation="dir", cleanup="never")
    kept = open_workspace(never, task_id="t2", root=tmp_path / "node")
    assert close_workspace(kept, never, ok=True) == {} and kept.path.exists()


def test_none_isolation_runs_in_the_repository_or_the_cwd(repo, tmp_path, monkeypatch):
    here = agent(repo, isolation="none")
    ws = open_workspace(here, task_id="t1", root=tmp_path / "node")
    assert (ws.path, ws.branch, ws.base) == (repo, None, None)
    assert close_workspace(ws, here, ok=True) == {} and repo.exists()
    monkeypatch.chdir(tmp_path)
    assert open_workspace(agent(None, isolation="none"), task_id="t1", root=tmp_path / "node").path == tmp_path
    assert not (tmp_path / "node").exists()


def test_prune_removes_what_ended_more_than_keep_days_ago(repo, tmp_path):
    builder = agent(repo, cleanup="never", keep_days=2)
    root = tmp_path / "node"
    old = open_workspace(builder, task_id="old", root=root)
    recent = open_workspace(builder, task_id="recent", root=root)
    running = open_workspace(builder, task_id="running", root=root)
    close_workspace(old, builder, ok=True)
    close_workspace(recent, builder, ok=True)
    now = time.time()
    for ws in (old, running):
        os.utime(ws.path, (now - 3 * 86400, now - 3 * 86400))
    os.utime(recent.path, (now - 1 * 86400, now - 1 * 86400))
    scratch = agent(None, isolation="dir", cleanup="never", keep_days=2)
    stale = open_workspace(scratch, task_id="stale", root=root)
    os.utime(stale.path, (now - 5 * 86400, now - 5 * 86400))

    removed = prune_workspaces(builder, root=root, now=now, active=[running.path])
    assert removed == [old.path, stale.path]
    assert not old.path.exists() and recent.path.exists() and running.path.exists() and not stale.path.exists()
    listed = git(repo, "worktree", "list")
    assert str(old.path) not in listed and str(recent.path) in listed
    assert git(repo, "rev-parse", "--verify", "refs/heads/commhub/builder/old")  # its branch is kept
    assert prune_workspaces(agent(repo, keep_days=None), root=root, now=now + 1e9) == []


def test_a_spare_made_ahead_becomes_the_next_tasks_worktree_at_the_current_head(repo, tmp_path):
    builder = agent(repo)
    root = tmp_path / "node"
    assert prepare_spare(builder, root=root) is True
    assert prepare_spare(builder, root=root) is False  # one spare an agent
    spare = root / "worktrees" / "builder" / ".spare"
    assert git(spare, "status", "--porcelain") == ""
    # The repository moves on after the spare was made: the task still starts from its HEAD now.
    (repo / "NEWS").write_text("later\n")
    git(repo, "add", "NEWS")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "later")
    head = git(repo, "rev-parse", "HEAD")
    ws = open_workspace(builder, task_id="t1", root=root)
    assert ws.path == root / "worktrees" / "builder" / "t1" and not spare.exists()
    assert git(ws.path, "rev-parse", "--abbrev-ref", "HEAD") == "commhub/builder/t1"
    assert git(ws.path, "rev-parse", "HEAD") == head == ws.base and (ws.path / "NEWS").exists()
    (ws.path / "out.txt").write_text("done\n")
    result = close_workspace(ws, builder, ok=True)
    assert result["branch"] == "commhub/builder/t1" and "out.txt" in result["diffstat"]
    # Without a spare (taken), the next task makes its worktree the ordinary way.
    assert open_workspace(builder, task_id="t2", root=root).branch == "commhub/builder/t2"


def test_a_broken_spare_is_dropped_and_the_task_still_gets_its_worktree(repo, tmp_path):
    builder = agent(repo)
    root = tmp_path / "node"
    prepare_spare(builder, root=root)
    git(repo, "branch", "commhub/builder/t1")  # a branch of that name already there: the switch fails
    ws = open_workspace(builder, task_id="t1", root=root)
    assert git(ws.path, "rev-parse", "--abbrev-ref", "HEAD") == "commhub/builder/t1"
    assert not (root / "worktrees" / "builder" / ".spare").exists()
    assert prepare_spare(builder, root=root) is True  # made again
