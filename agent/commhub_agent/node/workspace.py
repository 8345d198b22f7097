"""Where a task runs, by its agent's `isolation`: its own git worktree, a fresh directory, or the configured one.

    <root>/worktrees/<alias>/<task_id>   isolation "worktree": on branch commhub/<alias>/<task_id>
    <root>/worktrees/<alias>/.spare      made ahead, detached: the next task takes it (prepare_spare)
    <root>/dirs/<alias>/<task_id>        isolation "dir"

Sibling tasks never share files (multica issue 2008): each worktree has its own checkout and branch, and
what a run leaves behind is committed on its branch when it ends, so removing the worktree loses nothing.
Blocking calls (git, rmtree): the node runs them in a worker thread.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from commhub_agent.node.config import AgentConfig
from commhub_agent.state import safe_name

BRANCH_PREFIX = "commhub"
SPARE = ".spare"  # an agent's worktree made ahead (no task id starts with a dot: path_component escapes it)
DIFFSTAT_MAX = 2048
COMMITTER = ("commhub-agent", "commhub-agent@localhost")
# A ref component git cannot refuse: no "..", no ".lock" at the end, no dot at either end.
PLAIN_REF = re.compile(r"(?!.*\.\.)(?!.*\.lock$)[A-Za-z0-9_-](?:[A-Za-z0-9_.-]*[A-Za-z0-9_-])?")
GIT_TIMEOUT = 300.0  # a worktree add checks out the whole tree: generous for a large repository

# Worktree add / remove / prune of one repository, one at a time: git's own locks make a concurrent
# second call fail rather than wait, and the node opens workspaces for several tasks at once.
_repo_locks: dict[Path, threading.Lock] = {}
_lock_keys: dict[Path, Path] = {}  # a folder -> its repository's git directory (asked of git once)
_repo_locks_guard = threading.Lock()


class WorkspaceError(Exception):
    """A workspace could not be made or closed; the message carries git's own words."""


@dataclass
class Workspace:
    path: Path  # the run's working directory
    branch: str | None  # the task's branch (worktree isolation); None otherwise
    base: str | None  # the commit the branch started from, for the diffstat
    task_id: str = ""
    tree: Path | None = None  # the worktree's top (path is below it when the repository is a subfolder)


def open_workspace(agent: AgentConfig, *, task_id: str, root: Path) -> Workspace:
    if agent.isolation == "worktree":
        return _open_worktree(agent, task_id=task_id, root=root)
    if agent.isolation == "dir":
        path = root / "dirs" / path_component(agent.alias) / path_component(task_id)
        # A retry gets a fresh, empty directory like the first attempt did: "dir" promises a clean start.
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return Workspace(path=path, branch=None, base=None, task_id=task_id)
    return Workspace(path=agent.repository or Path.cwd(), branch=None, base=None, task_id=task_id)


def close_workspace(ws: Workspace, agent: AgentConfig, *, ok: bool) -> dict[str, Any]:
    """What the task's result should name, then the cleanup policy's removal. A worktree's dict holds branch
    (None if the run left HEAD detached), head, base and diffstat, and `workspace` (its path) when it is kept;
    {} for dir and none. Raises WorkspaceError if git cannot commit or read the worktree."""
    remove = agent.cleanup == "on_success" and ok
    if agent.isolation == "worktree" and ws.tree is not None:
        return _close_worktree(ws, agent, remove=remove)
    if agent.isolation == "dir":
        # Nothing to name in the result: the folder is <root>/dirs/<alias>/<task_id>, kept or not.
        if remove:
            shutil.rmtree(ws.path, ignore_errors=True)
        else:
            _touch(ws.path)
    return {}


def prune_workspaces(agent: AgentConfig, *, root: Path, now: float, active: Collection[Path] = ()) -> list[Path]:
    """Remove the agent's workspaces closed more than keep_days ago (a closed one's time is set at close;
    one never closed, from a node killed mid-run, counts from its creation). `active`: paths of runs in
    progress, never removed whatever their age."""
    if agent.keep_days is None:
        return []
    cutoff = now - agent.keep_days * 86400
    busy = {Path(p) for p in active}
    removed: list[Path] = []
    for kind in ("worktrees", "dirs"):
        folder = root / kind / path_component(agent.alias)
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.name == SPARE or path in busy or not path.is_dir() or path.stat().st_mtime >= cutoff:
                continue
            if kind == "worktrees":
                _remove_worktree(path, agent.repository)
            else:
                shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    if agent.isolation == "worktree" and agent.repository is not None:
        with _repo_lock(agent.repository):
            _git(agent.repository, "worktree", "prune", check=False)
    return removed


# ---------------------------------------------------------------------------------------------- names


def path_component(text: str) -> str:
    """`safe_name`, made safe as one path component too: never "." or "..", never past a file name's length."""
    name = safe_name(text)
    if name in ("", ".", ".."):
        name = name.replace(".", "%2e") or "%"
    return _bounded(name)


def branch_name(alias: str, task_id: str) -> str:
    """commhub/<alias>/<task_id>, each part a valid ref component (git check-ref-format's rules)."""
    parts = (_ref_component(alias), _ref_component(task_id))
    name = f"{BRANCH_PREFIX}/{parts[0]}/{parts[1]}"
    if all(PLAIN_REF.fullmatch(part) for part in parts):
        return name  # letters, digits, - _ and inner dots: nothing check-ref-format refuses (no process)
    done = subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True, text=True)
    if done.returncode != 0:
        raise WorkspaceError(f"no valid branch name for task {task_id!r} of {alias!r}: {name!r}")
    return name


def _ref_component(text: str) -> str:
    name = path_component(text)  # no space ~ ^ : ? * [ \ @ or control characters are left after safe_name
    name = name.replace("..", ".%2e")
    if name.startswith("."):
        name = "%2e" + name[1:]
    if name.endswith("."):
        name = name[:-1] + "%2e"
    if name.endswith(".lock"):
        name = name[: -len(".lock")] + "%2elock"
    return name


def _bounded(name: str, most: int = 200) -> str:
    # File systems take 255 bytes a name; an alias of 200 characters can triple under safe_name.
    if len(name) <= most:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return f"{name[: most - 17]}-{digest}"


# ---------------------------------------------------------------------------------------------- worktrees


def _open_worktree(agent: AgentConfig, *, task_id: str, root: Path) -> Workspace:
    repository = agent.repository
    if repository is None:
        raise WorkspaceError(f"{agent.alias}: isolation worktree needs a repository")
    branch = branch_name(agent.alias, task_id)
    tree = root / "worktrees" / path_component(agent.alias) / path_component(task_id)
    prefix = _prefix(repository)  # the repository may be a subfolder
    with _repo_lock(repository):
        head = _git(repository, "rev-parse", "--verify", "HEAD^{commit}", what="the repository has no commit yet")
        head = head.strip()
        if not tree.exists():
            # The common case, a task's first attempt here: the spare made ahead, else one `worktree add`
            # (each git call is a process, and a checkout of a large tree takes seconds: this path is the
            # node's start-up latency for every task). A branch left by an earlier attempt, or a stale
            # registration, makes both fail: then the careful path below.
            tree.parent.mkdir(parents=True, exist_ok=True)
            if _take_spare(repository, tree.parent / SPARE, tree, branch, head):
                return Workspace(
                    path=tree / prefix if prefix else tree, branch=branch, base=head, task_id=task_id, tree=tree
                )
            added = _git(repository, "worktree", "add", "-q", "-b", branch, str(tree), head, status=True)
            if added == "0":
                return Workspace(
                    path=tree / prefix if prefix else tree, branch=branch, base=head, task_id=task_id, tree=tree
                )
            shutil.rmtree(tree, ignore_errors=True)
        _git(repository, "worktree", "prune")  # forget worktrees deleted by hand, or git refuses their branch
        registered = _worktrees(repository)
        if tree.exists() and registered.get(tree.resolve()) == f"refs/heads/{branch}":
            # A retry on this node whose earlier worktree was kept (it failed, or cleanup is "never"):
            # carry on in it. What the earlier attempt left is committed on the branch, so nothing is lost.
            pass
        else:
            if tree.exists():
                # Ours by its path, yet not this task's branch checked out: a half-made or foreign one.
                _git(repository, "worktree", "remove", "--force", "--force", str(tree), check=False)
                shutil.rmtree(tree, ignore_errors=True)
                _git(repository, "worktree", "prune")
            tree.parent.mkdir(parents=True, exist_ok=True)
            if _git(repository, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False):
                # A retry whose earlier worktree was removed: check its branch out again, so the new attempt
                # starts from what the earlier one committed (the agent can reset it; a person can delete it).
                _git(repository, "worktree", "add", str(tree), branch)
            else:
                _git(repository, "worktree", "add", "-b", branch, str(tree), head)
        # The fork point, not HEAD: on a retry the branch may carry commits, and the repository may have moved.
        base = _git(repository, "merge-base", head, f"refs/heads/{branch}").strip()
    path = tree / prefix if prefix else tree
    return Workspace(path=path, branch=branch, base=base, task_id=task_id, tree=tree)


def prepare_spare(agent: AgentConfig, *, root: Path) -> bool:
    """Make the agent's spare worktree (detached at the repository's HEAD) unless it has one: its next
    task's worktree then costs a branch switch and a rename instead of a checkout. Blocking (git): the
    node runs it in a thread, after a task has started. True: one was made."""
    if agent.isolation != "worktree" or agent.repository is None:
        return False
    spare = root / "worktrees" / path_component(agent.alias) / SPARE
    with _repo_lock(agent.repository):
        if spare.exists():
            return False
        spare.parent.mkdir(parents=True, exist_ok=True)
        if _git(agent.repository, "worktree", "add", "-q", "--detach", str(spare), "HEAD", status=True) == "0":
            return True
        shutil.rmtree(spare, ignore_errors=True)
        return False


def _take_spare(repository: Path, spare: Path, tree: Path, branch: str, head: str) -> bool:
    """The spare becomes the task's worktree: its branch made at `head` (a checkout of what changed since
    the spare was made, usually nothing), then moved to the task's path. Called under the repository's lock."""
    if not spare.exists():
        return False
    if _git(spare, "switch", "-q", "--discard-changes", "-c", branch, head, status=True) == "0":
        if _git(repository, "worktree", "move", str(spare), str(tree), status=True) == "0":
            return True
        _git(repository, "branch", "-D", branch, check=False)  # made above, still empty: not this task's
    # A broken spare (removed by hand, a branch of that name already there, ...): gone, made again later.
    _git(repository, "worktree", "remove", "--force", "--force", str(spare), check=False)
    shutil.rmtree(spare, ignore_errors=True)
    return False


def _close_worktree(ws: Workspace, agent: AgentConfig, *, remove: bool) -> dict[str, Any]:
    assert ws.tree is not None
    tree = ws.tree
    _git(tree, "add", "-A")
    if _git(tree, "diff", "--cached", "--quiet", check=False, status=True) != "0":
        env = {
            "GIT_AUTHOR_NAME": COMMITTER[0],
            "GIT_AUTHOR_EMAIL": COMMITTER[1],
            "GIT_COMMITTER_NAME": COMMITTER[0],
            "GIT_COMMITTER_EMAIL": COMMITTER[1],
        }
        _git(
            tree,
            "-c",
            f"user.name={COMMITTER[0]}",
            "-c",
            f"user.email={COMMITTER[1]}",
            "-c",
            "commit.gpgsign=false",  # a save point of the run's work, not something a person signs
            "commit",
            "--quiet",
            "--no-verify",  # the project's hooks judge finished work; this commit only keeps what is there
            "-m",
            f"commhub: task {ws.task_id}",
            env=env,
        )
    head = _git(tree, "rev-parse", "HEAD").strip()
    current = _git(tree, "symbolic-ref", "--quiet", "--short", "HEAD", check=False).strip() or None
    result: dict[str, Any] = {
        "branch": current,
        "head": head,
        "base": ws.base,
        "diffstat": _diffstat(tree, ws.base, head),
    }
    # A run that left HEAD detached has commits no branch holds: keep its worktree so they stay reachable.
    if remove and current is not None:
        _remove_worktree(tree, agent.repository)
    else:
        _touch(tree)
        result["workspace"] = str(ws.path)
    return result


def _diffstat(tree: Path, base: str | None, head: str) -> str:
    if base is None:
        return ""
    stat = _git(tree, "diff", "--stat=160", f"{base}..{head}").rstrip("\n").splitlines()
    if not stat:
        return "no changes"
    summary, files = stat[-1].strip(), stat[:-1]
    kept: list[str] = []
    room = DIFFSTAT_MAX - len(summary) - 40
    for line in files:
        if room - len(line) - 1 < 0:
            kept.append(f" … {len(files) - len(kept)} more files")
            break
        kept.append(line)
        room -= len(line) + 1
    return "\n".join([*kept, summary])


def _remove_worktree(tree: Path, repository: Path | None) -> None:
    """Remove a worktree (its branch stays), through the repository it belongs to: that may no longer be
    the agent's configured one after a reload."""
    owner = _common_dir(tree)
    if owner is not None:
        with _repo_lock(owner):
            _git_dir(owner, "worktree", "remove", "--force", "--force", str(tree), check=False)
    if tree.exists():  # not a worktree any more (or git refused): the directory is ours all the same
        shutil.rmtree(tree, ignore_errors=True)
        if repository is not None:
            with _repo_lock(repository):
                _git(repository, "worktree", "prune", check=False)


def _worktrees(repository: Path) -> dict[Path, str | None]:
    """The repository's worktrees: path -> its branch ref (None when detached)."""
    found: dict[Path, str | None] = {}
    current: Path | None = None
    for line in _git(repository, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            current = Path(line[len("worktree ") :]).resolve()
            found[current] = None
        elif line.startswith("branch ") and current is not None:
            found[current] = line[len("branch ") :]
    return found


def _touch(path: Path) -> None:
    try:
        os.utime(path)  # prune counts keep_days from here: from the task's end, not its start
    except OSError:
        pass


def _common_dir(path: Path) -> Path | None:
    """The git directory all of a repository's worktrees share (None: not in a repository)."""
    common = _git(path, "rev-parse", "--git-common-dir", check=False).strip()
    return (path / common).resolve() if common else None  # relative to `path` unless absolute


@functools.lru_cache(maxsize=256)
def _prefix(repository: Path) -> str:
    """Where the repository folder is inside its git work tree ("" at its top); fixed for a folder."""
    return _git(repository, "rev-parse", "--show-prefix").strip()


def _repo_lock(path: Path) -> threading.Lock:
    """The lock of the repository `path` is in (its main folder, a worktree or its git directory)."""
    with _repo_locks_guard:
        if path not in _lock_keys:
            _lock_keys[path] = _common_dir(path) or path.resolve()
        return _repo_locks.setdefault(_lock_keys[path], threading.Lock())


def _git(
    cwd: Path,
    *args: str,
    check: bool = True,
    status: bool = False,
    what: str | None = None,
    env: dict[str, str] | None = None,
) -> str:
    return _run(["git", "-C", str(cwd), *args], check=check, status=status, what=what, env=env)


def _git_dir(git_dir: Path, *args: str, check: bool = True) -> str:
    return _run(["git", f"--git-dir={git_dir}", *args], check=check)


def _run(
    argv: list[str],
    *,
    check: bool = True,
    status: bool = False,
    what: str | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """git's stdout (or its exit status as text, with `status`); a failure raises WorkspaceError with git's words."""
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            env={**os.environ, **env} if env else None,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WorkspaceError(f"{' '.join(argv[:4])}: {exc}") from exc
    if status:
        return str(done.returncode)
    if done.returncode != 0:
        if not check:
            return ""
        said = (done.stderr or done.stdout).strip().splitlines()
        raise WorkspaceError(what or f"{' '.join(argv[3:6])} failed: {said[-1] if said else f'exit {done.returncode}'}")
    return done.stdout
