"""The `claude` runtime: Claude Code driven through the official Claude Agent SDK (`claude-agent-sdk`).

The SDK starts the CLI (`cli_path`, else the CLI bundled with the SDK, else `claude` on PATH), speaks its
stream-json control protocol and hands us typed messages; this adapter turns them into the node's events:

    system/init             -> Started(session)
    assistant tool_use      -> Progress("<tool> <input summary>", tool, files edited)
    assistant text          -> Progress(first line)
    assistant usage         -> UsageSoFar (tokens so far; the cost only comes with the result)
    result                  -> UsageSoFar, then Finished(ok, reply or error text, usage, session)

A tool use the CLI needs permission for reaches the SDK's `can_use_tool` callback, which asks the
operator through `job.ask` and allows or denies it.

The SDK is an optional dependency (`commhub-agent[claude]`), imported only when a claude agent is
configured.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import typing
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from ..runtime import ConfigError, Event, Finished, Job, Progress, Run, Runtime, Started, Usage, UsageSoFar

_MISSING_SDK = (
    "the claude runtime needs the Claude Agent SDK: install commhub-agent with its extra, "
    "pipx install './agent[claude]' from a CommHub checkout (or pipx inject commhub-agent claude-agent-sdk)"
)
# Tools whose input names a file they change; their Progress lists it.
_FILE_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
# The input keys that say best what a tool call does, in order of preference.
_SUMMARY_KEYS = ("command", "file_path", "notebook_path", "pattern", "url", "query", "path", "description", "prompt")
# Variables the SDK sets for the CLI itself (subprocess_cli.py `connect`); never blanked below.
_SDK_OWNED_ENV = {
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_AGENT_SDK_VERSION",
    "CLAUDE_CODE_SDK_READS_SESSION_STATE",
    "CLAUDE_AGENT_SDK_CLIENT_APP",
    "CLAUDE_AGENT_SDK_DERIVED_CLIENT_APP",
    "PWD",
}
_STOP_GRACE = 5.0  # seconds between TERM and KILL, and for the SDK to wind down after
_TEXT_WIDTH = 200


def _sdk(key: str = "runtime") -> Any:
    try:
        import claude_agent_sdk
    except ImportError as exc:
        raise ConfigError(key, _MISSING_SDK) from exc
    return claude_agent_sdk


class ClaudeRuntime(Runtime):
    name = "claude"
    options_spec = {
        "max_turns": int,
        "allowed_tools": list,
        "disallowed_tools": list,
        "permission_mode": str,
        "model": str,
        "cli_path": str,
        "system_prompt": str,
    }

    def __init__(self, options: dict[str, Any], *, key: str = "options") -> None:
        super().__init__(options, key=key)
        # Refused where the agent chose this runtime: `agents.NAME.runtime` for `agents.NAME.options`.
        sdk = _sdk(f"{key.rpartition('.')[0]}.runtime".lstrip("."))
        if "max_turns" in options and options["max_turns"] < 1:
            raise ConfigError(f"{key}.max_turns", f"must be 1 or more, not {options['max_turns']}")
        for name in ("allowed_tools", "disallowed_tools"):
            tools = options.get(name, [])
            if not all(isinstance(t, str) and t.strip() for t in tools):
                raise ConfigError(
                    f"{key}.{name}", f'must be a list of tool names (e.g. ["Read", "Bash(git *)"]), not {tools!r}'
                )
        modes = typing.get_args(sdk.PermissionMode)
        if "permission_mode" in options and options["permission_mode"] not in modes:
            raise ConfigError(
                f"{key}.permission_mode", f"must be one of {', '.join(modes)}, not {options['permission_mode']!r}"
            )
        if "model" in options and not options["model"].strip():
            raise ConfigError(f"{key}.model", 'must name a model (e.g. "sonnet"), not be empty')
        if "cli_path" in options and _resolve(options["cli_path"]) is None:
            raise ConfigError(f"{key}.cli_path", f"no executable Claude Code at {options['cli_path']!r}")

    async def start(self, job: Job) -> Run:
        run = ClaudeRun(self.options, job)
        await run.begin()
        return run

    @classmethod
    def version(cls, options: dict[str, Any] | None = None) -> str | None:
        cli = _find_cli((options or {}).get("cli_path"))
        if cli is None:
            return None
        try:
            done = subprocess.run([cli, "--version"], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        words = done.stdout.split()  # "2.1.332 (Claude Code)"
        return words[0] if done.returncode == 0 and words else None


class ClaudeRun(Run):
    """One task's conversation. A driver task owns the SDK client from connect to disconnect (the SDK wants
    one task to do both) and puts events on a queue that `events()` reads."""

    def __init__(self, options: dict[str, Any], job: Job) -> None:
        self._options, self._job = options, job
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self._connected = asyncio.Event()
        self._client: Any = None
        self._driver: asyncio.Task[None] | None = None
        self._stopping = False
        self._stderr: deque[str] = deque(maxlen=20)
        self._session: str | None = job.resume
        self._model: str | None = options.get("model")
        self._started = False
        self._usage = Usage()  # tokens so far, from the assistant messages
        self._counted: set[str] = set()

    async def begin(self) -> None:
        self._driver = asyncio.create_task(self._drive(), name=f"claude {self._job.task_id}")
        # Back once the CLI runs and has answered the SDK's handshake, or has failed to (events() says why).
        await self._connected.wait()

    async def events(self) -> AsyncIterator[Event]:
        while True:
            event = await self._queue.get()
            yield event
            if isinstance(event, Finished):
                return

    async def stop(self) -> None:
        self._stopping = True
        driver = self._driver
        if driver is None or driver.done():
            return
        # The SDK lets us neither start the CLI in its own process group nor signal it, so the CLI's own
        # process gets TERM (it ends its tool subprocesses itself), then KILL; its exit ends the driver.
        self._signal(signal.SIGTERM)
        await asyncio.wait({driver}, timeout=_STOP_GRACE)
        if not driver.done():
            self._signal(signal.SIGKILL)
            await asyncio.wait({driver}, timeout=_STOP_GRACE)
        if not driver.done():
            driver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await driver

    def _signal(self, signum: int) -> None:
        # The SDK keeps the CLI's process on its transport and offers no public handle to it.
        transport = getattr(self._client, "_transport", None)
        process = getattr(transport, "_process", None)
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signum)

    async def _drive(self) -> None:
        finished: Finished | None = None
        failure: BaseException | None = None
        try:
            finished = await self._converse()
        except Exception as exc:
            failure = exc
        finally:
            self._connected.set()
            # Disconnect before Finished: it closes the CLI's stdin and waits for it to exit, which is when
            # Claude Code has written the session file the alias's next task resumes.
            if self._client is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._client.disconnect())
            if self._stopping:
                finished = Finished(
                    ok=False, text="stopped by the node", usage=self._usage, session=self._session, error="stopped"
                )
            elif finished is None:
                finished = self._failed(failure)
            self._queue.put_nowait(finished)

    async def _converse(self) -> Finished | None:
        sdk = _sdk()
        self._client = sdk.ClaudeSDKClient(self._sdk_options(sdk))
        if self._stopping:
            return None
        await self._client.connect(self._job.prompt)  # starts the CLI, shakes hands, sends the task
        self._connected.set()
        if self._stopping:  # stopped while it started: there may be no message to notice it by
            return None
        async for message in self._client.receive_messages():
            if self._stopping:
                return None
            finished = self._on_message(sdk, message)
            if finished is not None:
                return finished
        return None  # the CLI ended without a result: _failed says how

    def _sdk_options(self, sdk: Any) -> Any:
        return sdk.ClaudeAgentOptions(
            **_option_values(self._options, self._job, self._permission_callback()), stderr=self._stderr.append
        )

    def _permission_callback(self) -> Callable[..., Awaitable[Any]] | None:
        ask = self._job.ask
        if ask is None or self._options.get("permission_mode") == "bypassPermissions":
            return None  # nobody to ask, or nothing is ever asked

        async def can_use_tool(tool_name: str, tool_input: dict[str, Any], context: Any) -> Any:
            sdk = _sdk()
            summary = _summary(tool_name, tool_input)
            self._queue.put_nowait(
                Progress(text=f"waiting for permission: {tool_name} {summary}".rstrip(), tool=tool_name)
            )
            try:
                answer = await ask(f"Claude wants to use {tool_name}: {summary}. Allow?", ["allow", "deny"])
            except Exception as exc:
                return sdk.PermissionResultDeny(message=f"no answer from the operator ({exc})")
            if answer == "allow":
                return sdk.PermissionResultAllow()
            return sdk.PermissionResultDeny(message="the operator denied it")

        return can_use_tool

    def _on_message(self, sdk: Any, message: Any) -> Finished | None:
        if isinstance(message, sdk.SystemMessage) and message.subtype == "init":
            self._session = message.data.get("session_id") or self._session
            self._model = message.data.get("model") or self._model
            if not self._started:
                self._started = True
                self._queue.put_nowait(Started(session=self._session))
        elif isinstance(message, sdk.AssistantMessage):
            for block in message.content:
                if isinstance(block, sdk.ToolUseBlock):
                    field_ = _FILE_TOOLS.get(block.name)
                    path = block.input.get(field_) if field_ else None
                    text = f"{block.name} {_summary(block.name, block.input)}".rstrip()
                    files = [path] if isinstance(path, str) and path else []
                    self._queue.put_nowait(Progress(text=text, tool=block.name, files=files))
                elif isinstance(block, sdk.TextBlock) and block.text.strip():
                    self._queue.put_nowait(Progress(text=_first_line(block.text)))
            self._count(message)
        elif isinstance(message, sdk.ResultMessage):
            return self._finished(_result_fields(message))
        return None

    def _count(self, message: Any) -> None:
        # Claude Code sends one assistant frame per content block, each carrying its API call's whole
        # usage: count each message id once.
        usage = message.usage
        if not usage or message.message_id in self._counted:
            return
        if message.message_id:
            self._counted.add(message.message_id)
        self._usage = Usage(
            tokens_in=self._usage.tokens_in + _tokens_in(usage),
            tokens_out=self._usage.tokens_out + int(usage.get("output_tokens") or 0),
            model=self._model or message.model,
        )
        self._queue.put_nowait(UsageSoFar(usage=self._usage))

    def _finished(self, result: dict[str, Any]) -> Finished:
        usage = _result_usage(result, self._model)
        self._usage = usage
        self._session = result.get("session_id") or self._session
        self._queue.put_nowait(UsageSoFar(usage=usage))
        subtype, is_error = result.get("subtype"), bool(result.get("is_error"))
        if subtype == "success" and not is_error:
            return Finished(ok=True, text=result.get("result") or "", usage=usage, session=self._session)
        error = {"error_max_turns": "max_turns", "error_max_budget_usd": "budget"}.get(subtype or "")
        # A run that ends on an API failure says "success" with is_error set (and the API's words in result).
        error = error or ("api_error" if subtype == "success" else subtype or "error")
        errors = [e for e in result.get("errors") or [] if isinstance(e, str) and e.strip()]
        text = "; ".join(errors) or (result.get("result") or "").strip() or f"Claude Code ended with {subtype}"
        return Finished(ok=False, text=text, usage=usage, session=self._session, error=error)

    def _failed(self, failure: BaseException | None) -> Finished:
        # A CLI that refuses at start-up (an unknown session to resume, say) still sends an error result,
        # which the SDK raises with the result attached.
        data = getattr(failure, "data", None)
        if isinstance(data, dict) and data.get("type") == "result":
            finished = self._finished(data)
            if self._job.resume and not self._started:
                # Refused before the conversation began: the session is gone (deleted, or kept by another
                # machine). Not one to keep: the node starts the next task afresh.
                finished.error, finished.session = "resume", None
            return finished
        code = getattr(failure, "exit_code", None)
        if failure is None:
            said = "Claude Code ended without a result"
        elif code is not None:
            said = f"Claude Code exited with status {code} before its result"
        else:
            said = f"Claude Code failed: {failure}"
        tail = "\n".join(self._stderr)
        text = f"{said}:\n{tail}" if tail else said
        return Finished(ok=False, text=text, usage=self._usage, session=self._session, error="exit")


def _option_values(options: dict[str, Any], job: Job, can_use_tool: Any) -> dict[str, Any]:
    """The ClaudeAgentOptions fields for an agent's options and a job (shared by runs and the argv check)."""
    appended = options.get("system_prompt")
    return {
        "cwd": job.cwd,
        "env": _child_env(job.env),
        "resume": job.resume,
        "max_turns": options.get("max_turns"),
        "allowed_tools": list(options.get("allowed_tools", [])),
        "disallowed_tools": list(options.get("disallowed_tools", [])),
        "permission_mode": options.get("permission_mode"),
        "model": options.get("model"),
        "cli_path": _resolve(options["cli_path"]) if options.get("cli_path") else None,
        # The SDK's default is an empty system prompt, which would leave Claude Code without its own
        # instructions for its tools; the agent's `system_prompt` is appended to Claude Code's.
        "system_prompt": {"type": "preset", "preset": "claude_code", **({"append": appended} if appended else {})},
        "max_budget_usd": job.budget_usd,
        "can_use_tool": can_use_tool,
    }


def claude_command_line(options: dict[str, Any], job: Job) -> list[str]:
    """The argv the SDK starts Claude Code with for an agent's options and a job, built by the SDK's own
    transport (it has no public way to show it), so CI can check every flag against the installed CLI.
    A job with `ask` set includes the permission flags."""
    sdk = _sdk()
    from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport
    from claude_agent_sdk.types import _configure_can_use_tool

    async def can_use_tool(tool_name: str, tool_input: dict[str, Any], context: Any) -> Any:
        return sdk.PermissionResultDeny(message="not asked")

    callback = can_use_tool if job.ask and options.get("permission_mode") != "bypassPermissions" else None
    agent_options = sdk.ClaudeAgentOptions(**_option_values(options, job, callback))
    transport = SubprocessCLITransport(prompt=job.prompt, options=_configure_can_use_tool(agent_options))
    if transport._cli_path is None:
        transport._cli_path = transport._find_cli()
    return transport._build_command()


def _child_env(env: dict[str, str]) -> dict[str, str]:
    # The SDK lays ClaudeAgentOptions.env over the node's own environment and cannot unset a variable: one
    # the node left out of job.env (its own credentials) is set empty, so it does not reach the CLI.
    blanked = {name: "" for name in os.environ if name not in env and name not in _SDK_OWNED_ENV}
    return {**blanked, **env}


def _tokens_in(usage: dict[str, Any]) -> int:
    # Tokens in = input_tokens + cache_creation_input_tokens + cache_read_input_tokens: the API's
    # input_tokens counts only the part of each prompt that was neither written to nor read from the
    # prompt cache; the other two are the rest of what the model read, and are billed too (at their own
    # rates), so the three together are what the run consumed.
    return sum(
        int(usage.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )


def _result_usage(result: dict[str, Any], model: str | None) -> Usage:
    """What the whole run used. From the result's `modelUsage` when it has one: one entry per model the run
    called (subagents and the small model Claude Code uses on the side included), the same figures
    `total_cost_usd` is the sum of; its `usage` covers less (in a recorded Claude Code 2.1.4 run, 75,641
    tokens in and 634 out against modelUsage's 113,540 and 953), so it is only the fallback."""
    cost = result.get("total_cost_usd")
    by_model = result.get("modelUsage") or {}
    if by_model:
        tokens_in = sum(
            int(m.get("inputTokens") or 0)
            + int(m.get("cacheCreationInputTokens") or 0)
            + int(m.get("cacheReadInputTokens") or 0)
            for m in by_model.values()
        )
        tokens_out = sum(int(m.get("outputTokens") or 0) for m in by_model.values())
        model = model or max(by_model, key=lambda name: by_model[name].get("costUSD") or 0)
    else:
        usage = result.get("usage") or {}
        tokens_in, tokens_out = _tokens_in(usage), int(usage.get("output_tokens") or 0)
    return Usage(
        tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=None if cost is None else float(cost), model=model
    )


def _result_fields(message: Any) -> dict[str, Any]:
    """A ResultMessage back in the CLI's own field names, the shape a start-up refusal arrives in."""
    return {
        "type": "result",
        "subtype": message.subtype,
        "is_error": message.is_error,
        "result": message.result,
        "errors": message.errors,
        "session_id": message.session_id,
        "total_cost_usd": message.total_cost_usd,
        "usage": message.usage,
        "modelUsage": message.model_usage,
    }


def _summary(tool_name: str, tool_input: dict[str, Any]) -> str:
    for key in _SUMMARY_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            return _first_line(value, 120)
    return _first_line(json.dumps(tool_input, ensure_ascii=False, sort_keys=True), 120) if tool_input else ""


def _first_line(text: str, width: int = _TEXT_WIDTH) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def _resolve(cli_path: str) -> str | None:
    return shutil.which(str(Path(cli_path).expanduser()))


def _find_cli(cli_path: str | None) -> str | None:
    """The CLI the SDK would start: `cli_path`, else the SDK's own choice (its bundled CLI, then `claude`
    on PATH and the usual install places); `claude` on PATH when the SDK is not installed."""
    if cli_path:
        return _resolve(cli_path)
    try:
        sdk = _sdk()
        from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport
    except (ConfigError, ImportError):
        return shutil.which("claude")
    try:
        return SubprocessCLITransport(prompt="", options=sdk.ClaudeAgentOptions())._find_cli()
    except sdk.CLINotFoundError:
        return None
