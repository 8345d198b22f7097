"""What every runtime adapter offers the node: start a task, stream its events, stop it.

An adapter drives one agent tool (Claude Code, Codex, any command) through its official SDK or its
documented machine output, never a terminal screen. The node owns everything else: which task runs,
where (the job's `cwd`), which session it resumes, budgets, stalls, reports to the hub.

    runtime = RUNTIMES["codex"](options)     # once per agent; refuses bad options with ConfigError
    run = await runtime.start(job)           # the process is running
    async for event in run.events():         # Started, Progress, UsageSoFar ..., then one Finished
        ...
    await run.stop()                         # any time, from any task: idempotent

`events()` always ends with exactly one `Finished` (a stopped run too: ok=False, error "stopped").
A runtime that asks permission for a tool use calls `job.ask(question, choices)` and waits for the
answer (the node turns it into an ask_operator question on the task).
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar


class ConfigError(Exception):
    """A refusal of the node's configuration: which key (dotted, e.g. `agents.builder.runtime`) and why.
    The node adds the file name when it prints it."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key, self.reason = key, reason


@dataclass
class Usage:
    """What a run has used so far (or in all, on Finished). `cost_usd` None: the runtime does not say."""

    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    model: str | None = None

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out


@dataclass
class Job:
    """One task for one run."""

    task_id: str
    alias: str
    prompt: str  # what the agent is asked: the task text (with its context, if any, appended by the node)
    cwd: Path
    env: dict[str, str]  # the whole environment of the process (the node strips its own credentials)
    resume: str | None = None  # a session / thread id to continue; None: a fresh session
    budget_usd: float | None = None  # the node enforces both caps too; an adapter passes them on if its tool can
    budget_tokens: int | None = None
    ask: Callable[[str, list[str]], Awaitable[str]] | None = None  # ask(question, choices) -> the choice made
    # output(line): every line the run prints, as it prints it, for the node's tail (runtimes that echo).
    output: Callable[[str], None] | None = None


@dataclass
class Started:
    """The tool accepted the task: its session is known (None if it has none)."""

    session: str | None = None


@dataclass
class Progress:
    """What the run is doing now: a line for people, and the tool call / files when known."""

    text: str
    tool: str | None = None
    files: list[str] = field(default_factory=list)
    percent: float | None = None  # when the tool says how far it is (0-100)


@dataclass
class UsageSoFar:
    usage: Usage


@dataclass
class Finished:
    ok: bool
    text: str  # the reply on success; what went wrong (with the tool's own words) on failure
    usage: Usage = field(default_factory=Usage)
    session: str | None = None  # the session to resume next time (None: keep the one the node has)
    error: str | None = None  # a short machine word on failure: "exit 3", "max_turns", "budget", "stopped"


Event = Started | Progress | UsageSoFar | Finished


class Run(abc.ABC):
    @abc.abstractmethod
    def events(self) -> AsyncIterator[Event]: ...

    @abc.abstractmethod
    async def stop(self) -> None:
        """Stop the run now (its whole process group: TERM, a grace period, then KILL)."""


class Runtime(abc.ABC):
    name: ClassVar[str]
    # Whether its runs hand every printed line to job.output; else the node keeps their progress texts.
    echoes: ClassVar[bool] = False
    # The options an agent's `[agents.NAME.options]` table may hold for this runtime, with their types.
    options_spec: ClassVar[dict[str, type | tuple[type, ...]]] = {}

    def __init__(self, options: dict[str, Any], *, key: str = "options") -> None:
        for name, value in options.items():
            if name not in self.options_spec:
                known = ", ".join(sorted(self.options_spec)) or "none"
                raise ConfigError(f"{key}.{name}", f"not an option of the {self.name} runtime (it has: {known})")
            expected = self.options_spec[name]
            if not isinstance(value, expected) or (isinstance(value, bool) and expected in (int, float)):
                raise ConfigError(f"{key}.{name}", f"must be {_type_name(expected)}, not {value!r}")
        self.options = dict(options)

    @abc.abstractmethod
    async def start(self, job: Job) -> Run: ...

    @classmethod
    def version(cls, options: dict[str, Any] | None = None) -> str | None:
        """The installed tool's version (`None`: not installed), for `node init` and the node's report."""
        return None


def _type_name(expected: type | tuple[type, ...]) -> str:
    kinds = expected if isinstance(expected, tuple) else (expected,)
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "a list"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)
