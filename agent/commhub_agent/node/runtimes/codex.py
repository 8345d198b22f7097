"""The `codex` runtime: OpenAI's Codex CLI, headless, through its documented machine output.

A fresh task runs `codex exec --json [OPTIONS] --cd CWD -`; a resumed one
`codex exec --json [OPTIONS] --cd CWD resume THREAD_ID -`. Either prints one JSON event a line on
stdout (`ThreadEvent` in codex-rs/exec/src/exec_events.rs of openai/codex, written by
event_processor_with_jsonl_output.rs; developers.openai.com/codex/noninteractive):
`thread.started` (its `thread_id` is the session), `turn.started`, `item.started` / `item.updated` /
`item.completed` (`command_execution`, `file_change`, `mcp_tool_call`, `web_search`, `todo_list`,
`agent_message`, `reasoning`, `error`), `turn.completed` (with `usage`), `turn.failed`, `error`.

Checked against codex-cli 0.171.0 (the version tests/e2e pins), its `--help` and real runs against a
local Responses endpoint:
- `resume` takes only some of exec's options (no `--sandbox`, `--cd`, `--profile`); exec's own
  options go before `resume` and apply to the resumed thread too (lib.rs passes the sandbox and cwd
  into `thread/resume` and `turn/start`). So every option is given before `resume`.
- The prompt goes on stdin (`-`, documented for both forms): an argument is capped by the kernel
  (128 KiB per argument on Linux) and a task with its context can be longer.
- `error` events are not fatal by themselves: Codex prints one per reconnect attempt
  ("Reconnecting... 2/5") and goes on. The outcome is `turn.completed` / `turn.failed` and the exit
  status (1 after a failed or interrupted turn).
- `usage` is the thread's running total, not the turn's: a resumed thread reports what its earlier
  runs used plus this one (100 in, then 200 in for the same turn again). A run's usage is the
  difference from what the thread had reached before it, kept per thread in a small file
  (ThreadTotals). `input_tokens` includes `cached_input_tokens` (and `cache_write_input_tokens`),
  and `output_tokens` includes `reasoning_output_tokens`, as in the Responses API: Codex's own
  `TokenUsage::non_cached_input` is `input_tokens - cached_input_tokens` and its `blended_total`
  adds `output_tokens` alone (codex-rs/protocol/src/protocol.rs). So tokens_in = input_tokens and
  tokens_out = output_tokens.
- Codex reports no cost (cost_usd None) and no model in its events: the model is the one the
  options or Codex's config files name, when they do.
- Headless exec never asks for approval (lib.rs sets the approval policy to never): what a command
  may do is the sandbox's business, so `job.ask` is not used. Codex has no budget option; the node
  enforces budgets from the usage reported here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import anyio
from anyio.abc import Process

from commhub_agent.hub import RESULT_MAX, truncate
from commhub_agent.node.runtime import (
    ConfigError,
    Event,
    Finished,
    Job,
    Progress,
    Run,
    Runtime,
    Started,
    Usage,
    UsageSoFar,
)
from commhub_agent.process import lines, stop_group
from commhub_agent.state import default_state_dir

SANDBOXES = ("read-only", "workspace-write", "danger-full-access")
STDERR_TAIL = 2_000
PROGRESS_TEXT = 300
VERSION = re.compile(r"\d+\.\d+\.\d+[0-9A-Za-z.+-]*")


class CodexRuntime(Runtime):
    name = "codex"
    options_spec: ClassVar[dict[str, type | tuple[type, ...]]] = {
        "sandbox": str,  # read-only | workspace-write | danger-full-access (default workspace-write)
        "model": str,
        "binary": str,  # the codex executable (default: `codex` on the run's PATH)
        "skip_git_repo_check": bool,  # default true: a `dir` or `none` workspace need not be a git repository
        "config": list,  # "key=value" overrides, each passed as `--config key=value`
        "profile": str,
    }

    def __init__(self, options: dict[str, Any], *, key: str = "options", threads_file: Path | None = None) -> None:
        super().__init__(options, key=key)
        sandbox = self.options.get("sandbox", "workspace-write")
        if sandbox not in SANDBOXES:
            raise ConfigError(f"{key}.sandbox", f"must be one of {', '.join(SANDBOXES)}, not {sandbox!r}")
        for name in ("model", "binary", "profile"):
            if name in self.options and not self.options[name].strip():
                raise ConfigError(f"{key}.{name}", "must not be empty")
        for i, item in enumerate(self.options.get("config", [])):
            if not isinstance(item, str) or not item.partition("=")[0].strip() or "=" not in item:
                raise ConfigError(f"{key}.config[{i}]", f'must be a "key=value" string, not {item!r}')
        self.threads = ThreadTotals(threads_file or default_state_dir() / "codex-threads.json")

    async def start(self, job: Job) -> Run:
        argv = codex_command_line(self.options, job)
        # A fresh thread starts from zero; a resumed one from what it had reached when we last saw it.
        baseline = self.threads.get(job.resume) if job.resume else Counts(0, 0, 0)
        model = configured_model(self.options, job.env)
        process = await anyio.open_process(argv, cwd=job.cwd, env=job.env, start_new_session=True)
        return CodexRun(process, job, baseline=baseline, model=model, threads=self.threads)

    @classmethod
    def version(cls, options: dict[str, Any] | None = None) -> str | None:
        binary = (options or {}).get("binary") or "codex"
        try:
            done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        match = VERSION.search(done.stdout) if done.returncode == 0 else None  # "codex-cli 0.171.0"
        return match.group() if match else None


def codex_command_line(options: dict[str, Any], job: Job) -> list[str]:
    """The argv the codex runtime runs for `job` (the prompt itself goes on stdin)."""
    argv = [options.get("binary") or "codex", "exec", "--json", "--sandbox", options.get("sandbox", "workspace-write")]
    if options.get("model"):
        argv += ["--model", options["model"]]
    if options.get("profile"):
        argv += ["--profile", options["profile"]]
    for item in options.get("config", []):
        argv += ["--config", item]
    if options.get("skip_git_repo_check", True):
        argv.append("--skip-git-repo-check")
    argv += ["--cd", os.path.abspath(job.cwd)]  # the process starts in job.cwd: a relative --cd would nest
    if job.resume:
        argv += ["resume", job.resume]
    argv.append("-")
    return argv


class Counts(NamedTuple):
    """Token counts as Codex reports them (cached is part of input)."""

    input: int
    cached: int
    output: int


def run_counts(total: Counts, baseline: Counts | None) -> Counts:
    """What one run used, from the thread's running total at its end and at its start."""
    if baseline is None:
        # A resumed thread we have no record of (its record lost, or started elsewhere): the total
        # may hold earlier runs too. Counting it all errs on the side a budget can live with.
        return total
    if total.input < baseline.input or total.output < baseline.output:
        return total  # this Codex did not carry the thread's total over: its figures are this run's
    return Counts(*(now - before for now, before in zip(total, baseline, strict=True)))


class ThreadTotals:
    """The running token total each Codex thread had reached when a run here last saw it, in a
    small JSON file, so a resumed run after a node restart is still counted alone. Thread ids are
    UUIDs, so nodes sharing the file cannot mix them up; a record lost to a concurrent write only
    makes that thread's next run count its whole total (see run_counts)."""

    KEEP = 5_000  # records, the most recent; a thread idle past that many others is not resumed
    _lock = threading.Lock()

    def __init__(self, path: Path) -> None:
        self.path = path

    def get(self, thread: str) -> Counts | None:
        record = self._load().get(thread)
        try:
            return Counts(int(record["input"]), int(record["cached"]), int(record["output"]))
        except (TypeError, KeyError, ValueError):
            return None

    def record(self, thread: str, total: Counts) -> None:
        with self._lock:
            records = self._load()
            records[thread] = {**total._asdict(), "at": int(time.time())}
            if len(records) > self.KEEP:
                newest = sorted(records.items(), key=lambda item: item[1].get("at", 0))[-self.KEEP :]
                records = dict(newest)
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
                tmp.write_text(json.dumps(records))
                os.replace(tmp, self.path)
            except OSError:
                pass  # the run's usage is already counted; only a later resume's baseline is lost

    def _load(self) -> dict[str, Any]:
        try:
            records = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return records if isinstance(records, dict) else {}


def configured_model(options: dict[str, Any], env: dict[str, str]) -> str | None:
    """The model Codex will use, as far as the options and its config files say (None: its default)."""
    if options.get("model"):
        return options["model"]
    for item in reversed(options.get("config", [])):
        name, _, value = item.partition("=")
        if name.strip() == "model":
            try:
                parsed = tomllib.loads(f"v = {value}")["v"]
            except tomllib.TOMLDecodeError:
                parsed = value.strip()  # Codex too takes a value that is not TOML as a plain string
            return str(parsed)
    home = Path(env.get("CODEX_HOME") or Path(env.get("HOME") or Path.home()) / ".codex")
    profile = options.get("profile")
    # A profile is a file of its own layered over config.toml (`--profile`, 0.171); older Codex read
    # a [profiles.NAME] table of config.toml.
    if profile:
        model = _toml(home / f"{profile}.config.toml").get("model")
        if isinstance(model, str):
            return model
    config = _toml(home / "config.toml")
    if profile:
        model = config.get("profiles", {}).get(profile, {}).get("model")
        if isinstance(model, str):
            return model
    model = config.get("model")
    return model if isinstance(model, str) else None


def _toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


class CodexRun(Run):
    def __init__(
        self, process: Process, job: Job, *, baseline: Counts | None, model: str | None, threads: ThreadTotals
    ) -> None:
        self.process, self.job = process, job
        self.baseline, self.model, self.threads = baseline, model, threads
        self.stopped = False
        self.thread: str | None = None
        self.reply = ""
        self.usage = Usage(model=model)
        self.turn_completed = False
        self.failure: str | None = None  # turn.failed's message
        self.last_error: str | None = None  # the last `error` event: fatal only if the run then fails
        self.stderr: list[str] = []

    async def events(self) -> AsyncIterator[Event]:
        send, receive = anyio.create_memory_object_stream[Event](100)
        async with anyio.create_task_group() as io:
            io.start_soon(self._feed)
            io.start_soon(self._read_stdout, send)
            io.start_soon(self._read_stderr)
            async with receive:
                async for event in receive:
                    yield event
            await self.process.wait()
        yield self._finished(self.process.returncode)

    async def stop(self) -> None:
        self.stopped = True
        with anyio.CancelScope(shield=True):
            await stop_group(self.process)

    def _finished(self, code: int | None) -> Finished:
        tail = truncate("".join(self.stderr), STDERR_TAIL, keep="tail").strip()
        said = "\n".join(part for part in (self.failure or self.last_error, tail) if part)
        if self.stopped:
            return self._end(False, f"stopped\n{said}".rstrip(), "stopped")
        if self.failure is not None:
            return self._end(False, said, "turn failed")
        if self.turn_completed and code == 0:
            return self._end(True, truncate(self.reply, RESULT_MAX), None)
        if code == 0:
            return self._end(False, f"codex exited without finishing its turn\n{said}".rstrip(), "incomplete")
        return self._end(False, f"codex failed: exit status {code}\n{said}".rstrip(), f"exit {code}")

    def _end(self, ok: bool, text: str, error: str | None) -> Finished:
        return Finished(ok, truncate(text, RESULT_MAX), usage=self.usage, session=self.thread, error=error)

    async def _feed(self) -> None:
        assert self.process.stdin is not None
        try:
            await self.process.stdin.send(self.job.prompt.encode())
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass  # codex died before reading its prompt: its exit status and stderr tell why
        finally:
            await self.process.stdin.aclose()

    async def _read_stdout(self, send: Any) -> None:
        assert self.process.stdout is not None
        async with send:
            async for line in lines(self.process.stdout):
                try:
                    event = json.loads(line)
                except ValueError:
                    event = None
                if not isinstance(event, dict):
                    self._keep_stderr(line)  # not an event: kept with what codex said, in case it failed
                    continue
                for out in self._translate(event):
                    await send.send(out)

    async def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        async for line in lines(self.process.stderr):
            self._keep_stderr(line)

    def _keep_stderr(self, line: str) -> None:
        self.stderr.append(line)
        if len(self.stderr) > 400:
            del self.stderr[:200]

    def _translate(self, event: dict[str, Any]) -> list[Event]:
        kind = event.get("type")
        if kind == "thread.started" and isinstance(event.get("thread_id"), str):
            self.thread = event["thread_id"]
            return [Started(session=self.thread)]
        if kind in ("item.started", "item.completed") and isinstance(event.get("item"), dict):
            return self._item(event["item"], completed=kind == "item.completed")
        if kind == "turn.completed":
            self.turn_completed = True
            return [UsageSoFar(self._count(event.get("usage")))]
        if kind == "turn.failed":
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            self.failure = str(message or "turn failed")
        elif kind == "error":
            self.last_error = str(event.get("message") or "error")
        return []

    def _item(self, item: dict[str, Any], *, completed: bool) -> list[Event]:
        kind = item.get("type")
        if kind == "agent_message":
            if not completed:
                return []
            self.reply = str(item.get("text") or "")
            first = self.reply.strip().splitlines()[0] if self.reply.strip() else ""
            return [Progress(_short(first))] if first else []
        if kind == "command_execution":
            command = str(item.get("command") or "")
            status = item.get("status")
            suffix = f" ({status}, exit {item.get('exit_code')})" if status in ("failed", "declined") else ""
            return [Progress(_short(command) + suffix, tool="shell")]
        if kind == "file_change":
            files = [
                self._relative(change.get("path")) for change in item.get("changes") or [] if isinstance(change, dict)
            ]
            files = [name for name in files if name]
            verb = "edited" if completed and item.get("status") == "completed" else "editing"
            if completed and item.get("status") == "failed":
                verb = "failed to edit"
            return [Progress(_short(f"{verb} {', '.join(files)}"), files=files)] if files else []
        if kind == "mcp_tool_call":
            tool = f"mcp__{item.get('server')}__{item.get('tool')}"
            failed = " (failed)" if completed and item.get("status") == "failed" else ""
            return [Progress(tool + failed, tool=tool)]
        if kind == "web_search":
            return [Progress(_short(f"web search: {item.get('query') or ''}"), tool="web_search")]
        if kind == "todo_list" and isinstance(item.get("items"), list):
            steps = item["items"]
            done = sum(1 for step in steps if isinstance(step, dict) and step.get("completed"))
            return [Progress(f"plan: {done} of {len(steps)} steps done")]
        return []

    def _count(self, usage: Any) -> Usage:
        usage = usage if isinstance(usage, dict) else {}
        total = Counts(*(_int(usage.get(name)) for name in ("input_tokens", "cached_input_tokens", "output_tokens")))
        used = run_counts(total, self.baseline)
        self.usage = Usage(tokens_in=used.input, tokens_out=used.output, cost_usd=None, model=self.model)
        if self.thread:
            self.threads.record(self.thread, total)
        return self.usage

    def _relative(self, path: Any) -> str:
        if not isinstance(path, str) or not path:
            return ""
        for root in (self.job.cwd, self.job.cwd.resolve()):  # codex reports the canonical path
            try:
                return str(Path(path).relative_to(root))
            except ValueError:
                continue
        return path  # outside the workspace (an --add-dir), or relative already


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= PROGRESS_TEXT else text[: PROGRESS_TEXT - 1] + "…"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
