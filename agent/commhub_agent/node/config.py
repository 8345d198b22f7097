"""node.toml: what a node runs, read once at start (and again on SIGHUP), refused whole if any key is wrong.

    [node]            hub, name, state_dir, stop_grace
    [defaults]        any agent key, inherited by every agent (checked as that agent's own)
    [agents.ALIAS]    runtime, skills, repository, isolation, cleanup, concurrency, timeout, stall_after,
                      session, budget_usd, budget_tokens, env, command, and an [agents.ALIAS.options] table

Every refusal is a `ConfigError(key, reason)` naming the dotted key, so `describe_error` can print one line
the operator can act on: `node.toml: agents.builder.isolation: must be one of worktree, dir, none (got "tree")`.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import socket
import subprocess
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from commhub_agent.node.runtime import ConfigError
from commhub_agent.state import default_state_dir, safe_name

ISOLATIONS = ("worktree", "dir", "none")
SESSIONS = ("alias", "task", "chain")
CLEANUPS = ("on_success", "never")  # or "<N>d": kept at close, removed N days later

# The hub's own limits, mirrored because this package never imports the hub: an alias is an identifier
# (hub_core/validate.py ID_MAX, not blank, no NUL); skills are tags, and the rest (hub_agents/limits.py).
ALIAS_MAX = 200
SKILLS_MAX = 32
SKILL_MAX = 40
SKILL_PATTERN = re.compile(r"[a-z0-9][a-z0-9._+#-]*")
CONCURRENT_MAX = 100  # hub_agents/limits.py: report_status max_concurrent
AGENTS_MAX = 500  # hub_agents/limits.py NODE_AGENTS_MAX: the agents one node may report
_BLANK = re.compile(r"[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]*")

NODE_KEYS = ("hub", "name", "state_dir", "stop_grace")
AGENT_KEYS = (
    "runtime",
    "skills",
    "repository",
    "isolation",
    "cleanup",
    "concurrency",
    "timeout",
    "stall_after",
    "session",
    "budget_usd",
    "budget_tokens",
    "env",
    "command",
    "options",
)
# Both belong to one runtime, so a default for every agent would be wrong for the others.
NOT_DEFAULTS = ("command", "options")
TOP_KEYS = ("node", "defaults", "agents")

DEFAULT_STOP_GRACE = 30.0
DEFAULT_STALL_AFTER = 600.0


@dataclass(frozen=True)
class AgentConfig:
    alias: str
    runtime: str
    skills: tuple[str, ...]
    repository: Path | None  # absolute; None: none given (isolation none runs in the node's cwd)
    isolation: str  # worktree | dir | none
    cleanup: str  # on_success | never  (what close does; keep_days is what prune does later)
    keep_days: int | None  # "<N>d": a workspace is removed N days after its task; None: prune leaves it
    concurrency: int
    timeout: float | None
    stall_after: float
    session: str  # alias | task | chain; "task" for the command runtime, which keeps no session
    budget_usd: float | None
    budget_tokens: int | None
    env: dict[str, str]
    command: tuple[str, ...]  # the command runtime's argv; () for the others
    options: dict[str, Any]  # the runtime's own, already accepted by its class


@dataclass(frozen=True)
class NodeConfig:
    path: Path
    hub: str
    name: str
    state_dir: Path
    stop_grace: float
    agents: dict[str, AgentConfig]


def load_config(path: Path, *, environ: Mapping[str, str] = os.environ) -> NodeConfig:
    """Read and check node.toml; raises ConfigError naming the first wrong key."""
    path = Path(path).absolute()
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError("(file)", f"cannot be read: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("(file)", f"is not valid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError("(file)", f"is not UTF-8 text (byte {exc.start})") from exc
    _known_keys("", data, TOP_KEYS)
    base = path.parent

    node = _table("node", data.get("node", {}))
    _known_keys("node", node, NODE_KEYS)
    hub = _hub(node, environ)
    name = _identifier("node.name", node.get("name", socket.gethostname()))
    if "state_dir" in node:
        state_dir = _path("node.state_dir", node["state_dir"], base, environ)
    else:
        state_dir = default_state_dir() / f"node-{safe_name(name)}"
    stop_grace = _number("node.stop_grace", node.get("stop_grace", DEFAULT_STOP_GRACE), low=0.0)

    defaults = _table("defaults", data.get("defaults", {}))
    _known_keys("defaults", defaults, AGENT_KEYS)
    for key in NOT_DEFAULTS:
        if key in defaults:
            raise ConfigError(f"defaults.{key}", "belongs to one runtime: set it in each agent's own table")

    agents_table = _table("agents", data.get("agents", {}))
    if not agents_table:
        raise ConfigError("agents", 'no agents: declare at least one, e.g. [agents.builder] with runtime = "claude"')
    if len(agents_table) > AGENTS_MAX:
        raise ConfigError("agents", f"{len(agents_table)} agents; the hub takes at most {AGENTS_MAX} from one node")
    agents: dict[str, AgentConfig] = {}
    for alias, table in agents_table.items():
        key = f"agents.{toml_key(alias)}"
        _alias(key, alias)
        own = _table(key, table)
        _known_keys(key, own, AGENT_KEYS)
        agents[alias] = _agent(key, alias, defaults, own, base, environ)
    return NodeConfig(path=path, hub=hub, name=name, state_dir=state_dir, stop_grace=stop_grace, agents=agents)


def describe_error(path: Path | str, exc: ConfigError) -> str:
    """One line for the operator: `node.toml: agents.builder.isolation: must be one of ... (got "tree")`.
    A key naming an environment variable (`$COMMHUB_TOKEN`) is not the file's: it is shown alone."""
    if exc.key == "(file)":
        return f"{path}: {exc.reason}"
    if exc.key.startswith("$"):
        return f"{exc.key}: {exc.reason}"
    return f"{path}: {exc.key}: {exc.reason}"


def diff_configs(old: NodeConfig, new: NodeConfig) -> tuple[list[str], list[str], list[str]]:
    """What a reload changes, by alias: (added, removed, changed). A changed agent's running tasks finish
    under the old settings; its next task gets the new ones."""
    added = sorted(set(new.agents) - set(old.agents))
    removed = sorted(set(old.agents) - set(new.agents))
    changed = sorted(a for a in set(old.agents) & set(new.agents) if old.agents[a] != new.agents[a])
    return added, removed, changed


def restart_needed(old: NodeConfig, new: NodeConfig) -> list[str]:
    """The [node] keys a reload cannot apply (the hub connection, the node's name and its state)."""
    return [f"node.{key}" for key in ("hub", "name", "state_dir") if getattr(old, key) != getattr(new, key)]


# ---------------------------------------------------------------------------------------------- agents


def _agent(
    key: str, alias: str, defaults: dict[str, Any], own: dict[str, Any], base: Path, environ: Mapping[str, str]
) -> AgentConfig:
    merged = {**defaults, **own}
    # A table from both places is merged, the agent's entries winning: a default FOO and an agent's BAR.
    if isinstance(defaults.get("env"), dict) and isinstance(own.get("env"), dict):
        merged["env"] = {**defaults["env"], **own["env"]}

    def get(name: str, default: Any = None) -> Any:
        return merged.get(name, default)

    if "runtime" not in merged:
        raise ConfigError(f"{key}.runtime", f"is required, one of {', '.join(_runtime_names())}")
    runtime = _choice(f"{key}.runtime", merged["runtime"], _runtime_names())
    skills = _skills(f"{key}.skills", get("skills", []))
    isolation = _choice(f"{key}.isolation", get("isolation", "none"), ISOLATIONS)
    repository = None
    if "repository" in merged:
        repository = _path(f"{key}.repository", merged["repository"], base, environ)
        if not repository.exists():
            raise ConfigError(f"{key}.repository", f"{str(repository)!r} does not exist")
        if not repository.is_dir():
            raise ConfigError(f"{key}.repository", f"{str(repository)!r} is not a directory")
    if isolation == "worktree":
        if repository is None:
            raise ConfigError(f"{key}.repository", 'is required with isolation = "worktree" (a git repository)')
        _git_work_tree(f"{key}.repository", repository)
    cleanup, keep_days = _cleanup(f"{key}.cleanup", get("cleanup", "on_success"))
    concurrency = _integer(f"{key}.concurrency", get("concurrency", 1), low=1)
    if concurrency > CONCURRENT_MAX:
        raise ConfigError(
            f"{key}.concurrency", f"must be at most {CONCURRENT_MAX}, the hub's limit per agent (got {concurrency})"
        )
    timeout = None if get("timeout") is None else _number(f"{key}.timeout", merged["timeout"], low=0.0, open_low=True)
    stall_after = _number(f"{key}.stall_after", get("stall_after", DEFAULT_STALL_AFTER), low=0.0, open_low=True)
    budget_usd = None
    if get("budget_usd") is not None:
        budget_usd = _number(f"{key}.budget_usd", merged["budget_usd"], low=0.0, open_low=True)
    budget_tokens = (
        None if get("budget_tokens") is None else _integer(f"{key}.budget_tokens", merged["budget_tokens"], low=1)
    )
    env = _env(f"{key}.env", get("env", {}))

    if runtime == "command":
        if "command" not in own:
            raise ConfigError(
                f"{key}.command", 'is required for runtime "command": the argv to run, e.g. ["python", "agent.py"]'
            )
        command = _argv(f"{key}.command", own["command"])
        # Only the agent's own `session` is refused: one in [defaults] is meant for its claude and codex agents.
        if "session" in own:
            raise ConfigError(f"{key}.session", 'does not apply to runtime "command": every run starts afresh')
        session = "task"
    else:
        if "command" in own:
            raise ConfigError(f"{key}.command", f'is only for runtime "command", not "{runtime}"')
        command = ()
        session = _choice(f"{key}.session", get("session", "alias"), SESSIONS)
    options = _options(f"{key}.options", runtime, own.get("options", {}))
    return AgentConfig(
        alias=alias,
        runtime=runtime,
        skills=skills,
        repository=repository,
        isolation=isolation,
        cleanup=cleanup,
        keep_days=keep_days,
        concurrency=concurrency,
        timeout=timeout,
        stall_after=stall_after,
        session=session,
        budget_usd=budget_usd,
        budget_tokens=budget_tokens,
        env=env,
        command=command,
        options=options,
    )


def _runtime_names() -> list[str]:
    from commhub_agent.node.runtimes import RUNTIMES  # the adapters import their SDKs: only when asked

    return sorted(RUNTIMES)


def _options(key: str, runtime: str, value: Any) -> dict[str, Any]:
    from commhub_agent.node.runtimes import RUNTIMES

    options = _table(key, value)
    try:
        runtime_class = RUNTIMES[runtime]()
    except ImportError as exc:
        # e.g. the claude runtime on a machine without the Claude Agent SDK: refuse at start, not per task.
        raise ConfigError(key.rsplit(".", 1)[0] + ".runtime", f"the {runtime} runtime cannot be loaded: {exc}") from exc
    runtime_class(options, key=key)  # raises ConfigError(key.option, reason) itself
    return dict(options)


def _cleanup(key: str, value: Any) -> tuple[str, int | None]:
    if isinstance(value, str):
        if value in CLEANUPS:
            return value, None
        match = re.fullmatch(r"(\d+)d", value)
        if match:
            return "never", int(match.group(1))
    raise ConfigError(key, f'must be one of on_success, never or "<N>d" for N days, e.g. "7d" (got {_shown(value)})')


def _git_work_tree(key: str, repository: Path) -> None:
    try:
        done = subprocess.run(
            ["git", "-C", str(repository), "rev-parse", "--is-inside-work-tree"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except FileNotFoundError as exc:
        raise ConfigError(key, 'isolation = "worktree" needs git, which is not on PATH') from exc
    if done.returncode != 0 or done.stdout.strip() != "true":
        raise ConfigError(
            key,
            f'{str(repository)!r} is not a git work tree, which isolation = "worktree" needs'
            ' (use isolation = "dir" or "none" for a plain directory)',
        )


# ---------------------------------------------------------------------------------------------- [node]


def _hub(node: dict[str, Any], environ: Mapping[str, str]) -> str:
    if "hub" in node:
        value, source = node["hub"], ""
        if not isinstance(value, str):
            raise ConfigError("node.hub", f"must be a string, the hub's URL (got {_shown(value)})")
    else:
        value, source = environ.get("COMMHUB_URL", ""), " (from $COMMHUB_URL)"
        if not value:
            raise ConfigError("node.hub", 'is required: set hub = "http://host:8000" in [node] or $COMMHUB_URL')
    url = value.strip().rstrip("/")
    if not re.fullmatch(r"https?://[^/?#\s]+(/\S*)?", url):
        raise ConfigError(
            "node.hub",
            f"must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:8000 (got {_shown(value)}{source})",
        )
    return url


# ---------------------------------------------------------------------------------------------- values


def _known_keys(key: str, table: dict[str, Any], allowed: tuple[str, ...]) -> None:
    for name in table:
        if name in allowed:
            continue
        where = f"{key}.{toml_key(name)}" if key else toml_key(name)
        close = difflib.get_close_matches(name, allowed, n=1)
        hint = f'did you mean "{close[0]}"? ' if close else ""
        raise ConfigError(where, f"unknown key: {hint}the keys here are {', '.join(allowed)}")


def _table(key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(key, f"must be a table (got {_shown(value)})")
    return value


def _choice(key: str, value: Any, allowed: tuple[str, ...] | list[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ConfigError(key, f"must be one of {', '.join(allowed)} (got {_shown(value)})")
    return value


def _identifier(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(key, f"must be a string (got {_shown(value)})")
    if _BLANK.fullmatch(value):
        raise ConfigError(key, "must not be empty")
    if len(value) > ALIAS_MAX:
        raise ConfigError(key, f"is longer than {ALIAS_MAX} characters ({len(value)})")
    if "\x00" in value:
        raise ConfigError(key, "contains a NUL character")
    return value


def _alias(key: str, alias: str) -> None:
    """The hub's rule for an alias (an identifier), checked here so the node does not start agents
    whose every call the hub would refuse."""
    try:
        _identifier(key, alias)
    except ConfigError as exc:
        raise ConfigError(key, f"the alias {exc.reason}") from exc


def _number(key: str, value: Any, *, low: float, open_low: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) or math.isinf(value):
        raise ConfigError(key, f"must be a number (got {_shown(value)})")
    if value < low or (open_low and value == low):
        bound = f"more than {low:g}" if open_low else f"at least {low:g}"
        raise ConfigError(key, f"must be {bound} (got {_shown(value)})")
    return float(value)


def _integer(key: str, value: Any, *, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(key, f"must be a whole number (got {_shown(value)})")
    if value < low:
        raise ConfigError(key, f"must be at least {low} (got {value})")
    return value


def _skills(key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ConfigError(key, f'must be a list of tags, e.g. ["python"] (got {_shown(value)})')
    if len(value) > SKILLS_MAX:
        raise ConfigError(key, f"has {len(value)} skills; the hub takes at most {SKILLS_MAX}")
    for index, tag in enumerate(value):
        if not isinstance(tag, str) or len(tag) > SKILL_MAX or not SKILL_PATTERN.fullmatch(tag):
            raise ConfigError(
                f"{key}[{index}]",
                f"must be a short lower-case tag like python or code-review, at most {SKILL_MAX} characters"
                f" (got {_shown(tag)})",
            )
        if tag in value[:index]:
            raise ConfigError(f"{key}[{index}]", f"repeats {_shown(tag)}")
    return tuple(value)


def _env(key: str, value: Any) -> dict[str, str]:
    table = _table(key, value)
    for name, item in table.items():
        if not name or "=" in name or "\x00" in name:
            raise ConfigError(f"{key}.{toml_key(name)}", "is not a valid environment variable name")
        if not isinstance(item, str) or "\x00" in item:
            raise ConfigError(f"{key}.{toml_key(name)}", f"must be a string (got {_shown(item)})")
    return dict(table)


def _argv(key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise ConfigError(
            key, f'must be a non-empty list of strings, e.g. ["python", "agent.py"] (got {_shown(value)})'
        )
    for index, item in enumerate(value):
        if not isinstance(item, str) or "\x00" in item or (index == 0 and not item.strip()):
            raise ConfigError(f"{key}[{index}]", f"must be a string (got {_shown(item)})")
    return tuple(value)


def _path(key: str, value: Any, base: Path, environ: Mapping[str, str]) -> Path:
    """`~` and `$VAR` / `${VAR}` expanded from `environ`, a relative path taken from the config's folder."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(key, f"must be a path (got {_shown(value)})")

    def variable(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in environ:
            raise ConfigError(key, f"uses ${name}, which is not set")
        return environ[name]

    text = re.sub(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))", variable, value)
    if text == "~" or text.startswith("~/"):
        home = environ.get("HOME") or os.path.expanduser("~")
        text = home + text[1:]
    elif text.startswith("~"):
        text = os.path.expanduser(text)  # ~user
        if text.startswith("~"):
            raise ConfigError(key, f"names an unknown user's home ({_shown(value)})")
    return Path(os.path.normpath(base / text))  # an absolute `text` replaces `base`


def toml_key(name: str) -> str:
    """A table key as TOML would write it: bare when it can be, quoted otherwise."""
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name, ensure_ascii=False)


def _shown(value: Any) -> str:
    text = (
        json.dumps(value, ensure_ascii=False, default=str)
        if isinstance(value, str | int | float | bool)
        else repr(value)
    )
    return text if len(text) <= 80 else text[:77] + "..."
