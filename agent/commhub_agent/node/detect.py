"""Which agent CLIs this machine has, and the starter node.toml `commhub-agent node init` writes from them."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from datetime import UTC, datetime

from commhub_agent.node.config import DEFAULT_STALL_AFTER, DEFAULT_STOP_GRACE, toml_key
from commhub_agent.node.runtime import _type_name
from commhub_agent.state import default_state_dir, safe_name

# The CLIs people run agents with, by executable name. The ones with a runtime of their own are driven
# through it; the others are listed so `node init` can say a `command` agent can run them.
KNOWN_CLIS: dict[str, str] = {
    "claude": "Claude Code",
    "codex": "OpenAI Codex CLI",
    "gemini": "Gemini CLI",
    "qwen": "Qwen Code",
    "opencode": "opencode",
    "cursor-agent": "Cursor CLI",
    "copilot": "GitHub Copilot CLI",
    "aider": "Aider",
    "goose": "Goose",
    "amp": "Amp",
    "crush": "Crush",
    "droid": "Factory Droid",
    "auggie": "Augment CLI",
    "kimi": "Kimi CLI",
}
DRIVEN = ("claude", "codex")  # the runtimes with an adapter of their own, besides `command`
VERSION_TIMEOUT = 5.0
UNKNOWN = "unknown version"
PLACEHOLDER_REPOSITORY = "~/src/project"

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def installed_runtimes() -> dict[str, str | None]:
    """Every known CLI -> its version line (`UNKNOWN` when it is there but would not say), None if absent.
    All are asked at once: a CLI that hangs costs VERSION_TIMEOUT, not the sum of them."""
    pool = ThreadPoolExecutor(max_workers=len(KNOWN_CLIS), thread_name_prefix="detect")
    try:
        futures = {cli: pool.submit(_version, cli) for cli in KNOWN_CLIS}
        deadline = time.monotonic() + VERSION_TIMEOUT + 1
        found: dict[str, str | None] = {}
        for cli, future in futures.items():
            try:
                found[cli] = future.result(timeout=max(0.0, deadline - time.monotonic()))
            except FuturesTimeout:  # an adapter's own probe may wait longer than ours: it is there, unanswered
                found[cli] = f"{UNKNOWN} (no answer to --version in {VERSION_TIMEOUT:g} s)"
        return found
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _version(name: str) -> str | None:
    if name in DRIVEN:
        # The adapter knows where its tool is: the Claude Agent SDK ships its own CLI, for one.
        try:
            from commhub_agent.node.runtimes import RUNTIMES

            found = RUNTIMES[name]().version()
        except Exception:  # an adapter that cannot load (its SDK missing) leaves the question to the CLI
            found = None
        if found:
            return found
    return cli_version(name)


def cli_version(name: str, *, timeout: float = VERSION_TIMEOUT) -> str | None:
    """`NAME --version`'s first line; None if NAME is not on PATH."""
    path = shutil.which(name)
    if path is None:
        return None
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return f"{UNKNOWN} (no answer to --version in {timeout:g} s)"
    except OSError as exc:
        return f"{UNKNOWN} ({exc.strerror or exc})"
    if done.returncode != 0:
        return f"{UNKNOWN} (--version exited {done.returncode})"
    for line in _ANSI.sub("", done.stdout or done.stderr).splitlines():
        if line.strip():
            return line.strip()[:80]
    return UNKNOWN


# ---------------------------------------------------------------------------------------------- starter


def starter_config(found: dict[str, str | None], *, hub: str | None, name: str, repository: str | None = None) -> str:
    """The commented node.toml for this machine: what was found, and an agent for each runtime CommHub drives.
    `repository`: the folder the example agents work in (default a placeholder to edit)."""
    repo = repository or PLACEHOLDER_REPOSITORY
    driven = [runtime for runtime in DRIVEN if found.get(runtime)]
    aliases = [f"{name}-{runtime}" for runtime in driven] or [f"{name}-script"]
    lines = _header(found, token=_token_hint(name, aliases))
    lines += [
        "[node]",
        _line(
            f"hub = {_s(hub)}" if hub else 'hub = "http://127.0.0.1:8000"',
            "the hub's URL (default: $COMMHUB_URL)",
            on=bool(hub),
        ),
        _line(f"name = {_s(name)}", "this machine, as the hub's fleet page shows it (default: the host name)"),
        _line(
            f"state_dir = {_s(str(default_state_dir() / f'node-{safe_name(name)}'))}",
            "the journal of reports and sessions, kept across restarts (default shown)",
            on=False,
        ),
        _line(
            f"stop_grace = {DEFAULT_STOP_GRACE:g}",
            "on SIGTERM, seconds running tasks get to finish before they are failed with a retry hint",
            on=False,
        ),
        "",
        "[defaults]  # any agent key, inherited by every agent below (an agent's own value wins)",
        _line("concurrency = 1", "tasks one alias runs at once (default 1)", on=False),
        "",
    ]
    for runtime in driven:
        lines += _agent_example(runtime, alias=f"{name}-{runtime}", repository=repo, on=True)
    # With a real agent above, the command example stays commented out: it would take tasks as an agent too.
    lines += _agent_example("command", alias=f"{name}-script", repository=repo, on=not driven)
    return "\n".join(lines).rstrip("\n") + "\n"


def _token_hint(name: str, aliases: list[str]) -> list[str]:
    """How to make the node's token: one per machine, bound to the aliases below (hub_agents.identity)."""
    command = f"python manage.py create_token --network NETWORK --name {shlex.quote(name)} --alias "
    return [
        "# The hub's token is never kept here: the node reads it from $COMMHUB_TOKEN. Give each machine a token",
        "# of its own, bound to this file's aliases (in a strict network an unbound token acts as no agent):",
        f"#   {command}{shlex.quote(','.join(aliases))}",
        f"# An alias added below must be in the binding too, or match a pattern of it ({shlex.quote(name + '-*')}):",
        "# at start and on each reload the node asks the hub who its token is, and refuses any other.",
    ]


def _header(found: dict[str, str | None], *, token: list[str]) -> list[str]:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d")
    lines = [
        "# node.toml: the agents this machine runs for CommHub.",
        f"# Written by `commhub-agent node init` on {stamp}. Start with: commhub-agent node --config node.toml",
        *token,
        "# After an edit, `kill -HUP <node pid>` reloads it: agents are added, removed or changed, running tasks",
        "# go on. A wrong key is refused with its name and the reason, and the running config stays.",
        "#",
    ]
    present = {cli: version for cli, version in found.items() if version}
    if present:
        lines.append("# Agent CLIs found on this machine:")
        width = max(len(cli) for cli in present)
        version_width = max(len(version) for version in present.values())
        for cli, version in present.items():
            if cli in DRIVEN:
                note = f'runtime "{cli}"'
            else:
                note = f'no runtime of its own yet: a "command" agent can run it (command = ["{cli}", ...])'
            lines.append(f"#   {cli:<{width}}  {version:<{version_width}}  {KNOWN_CLIS.get(cli, cli)}: {note}")
    else:
        lines.append("# No agent CLI found on this machine (looked for: claude, codex and others below).")
    absent = [cli for cli, version in found.items() if not version]
    if absent:
        lines += [f"# {line}" for line in textwrap.wrap(f"Not found: {', '.join(absent)}.", 96)]
    return [*lines, "", ""]


def _agent_example(runtime: str, *, alias: str, repository: str, on: bool) -> list[str]:
    worktree = runtime != "command"
    table = f"agents.{toml_key(alias)}"
    body = [
        f'[{table}]  # the table key is the alias the hub knows this agent by (quote it: [agents."a b"])',
        _line(f"runtime = {_s(runtime)}", "claude | codex | command"),
        _line('skills = ["python"]', "tags tasks are routed by (default none)"),
        _line(f"repository = {_s(repository)}", "the folder its tasks work in: a git repository for worktree"),
        _line(
            f"isolation = {_s('worktree' if worktree else 'none')}",
            "worktree: a git worktree and branch per task | dir: a fresh empty folder per task"
            " | none: the repository itself (default none)",
        ),
    ]
    if worktree:
        body.append(
            _line(
                'cleanup = "on_success"',
                "on_success: remove a task's worktree when it succeeds (its branch stays) | never"
                ' | "7d": 7 days after it ends (default on_success)',
            )
        )
    body += [
        _line("concurrency = 1", "tasks this alias runs at once (default 1)"),
        _line("timeout = 3600", "seconds before a run is stopped and failed (default none)", on=False),
        _line(
            f"stall_after = {DEFAULT_STALL_AFTER:g}",
            "seconds without a sign of life: the task is reported blocked, its sender asked (default 600)",
        ),
    ]
    if runtime == "command":
        body.insert(
            2,
            _line(
                'command = ["python3", "agent.py"]',
                "run once per task: the task on stdin and in $COMMHUB_TASK; exit status 0 completes it",
            ),
        )
    else:
        body += [
            _line(
                'session = "alias"',
                "alias: one session resumed task after task | task: a fresh one each time"
                " | chain: one along a parent/child chain (default alias)",
            ),
            _line(
                "budget_usd = 5.0",
                "cap per task in USD, stopped and failed past it; send_task's own wins (default none)",
                on=False,
            ),
            _line("budget_tokens = 2000000", "cap per task in tokens (default none)", on=False),
        ]
    body.append(_line('env = { EXAMPLE = "value" }', "added to the run's environment (default none)", on=False))
    body += _options_example(runtime, table)
    if not on:
        body = [line if line.startswith("#") else f"# {line}" for line in body]
    return [*body, ""]


def _options_example(runtime: str, table: str) -> list[str]:
    """The runtime's own options, from its adapter's options_spec, all commented out."""
    try:
        from commhub_agent.node.runtimes import RUNTIMES

        runtime_class = RUNTIMES[runtime]()
    except Exception:  # the adapter cannot load here (its SDK is missing): no options to show
        return []
    spec = runtime_class.options_spec
    if not spec:
        return []
    samples = {str: '""', int: "1", float: "1.0", bool: "false", list: "[]"}
    # An adapter may say what each option does (`options_help`); its type is all the spec itself says.
    helps = getattr(runtime_class, "options_help", {})
    lines = ["", f"[{table}.options]  # the {runtime} runtime's own options, none required:"]
    for option, kind in spec.items():
        first = kind[0] if isinstance(kind, tuple) else kind
        said = helps.get(option) or _type_name(kind)
        lines.append(_line(f"{option} = {samples.get(first, '...')}", said, on=False))
    return lines


def _line(assignment: str, comment: str, *, on: bool = True) -> str:
    """`key = value  # what it does`, the comments of set and commented-out keys in one column."""
    return f"{assignment if on else '# ' + assignment:<38}  # {comment}"


def _s(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's."""
    return json.dumps(text, ensure_ascii=False)
