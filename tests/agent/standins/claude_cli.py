#!/usr/bin/env python3
"""A stand-in for the Claude Code CLI, for tests: the Claude Agent SDK is pointed at it with `cli_path`.

It accepts the command line the SDK builds (claude_agent_sdk/_internal/transport/subprocess_cli.py,
`_build_command`: `--output-format stream-json --verbose ... --input-format stream-json`) and refuses an
unknown option the way the real CLI does (`error: unknown option '--x'`, exit 1). It then speaks the SDK's
stream-json control protocol on stdin/stdout and replays one transcript from claude_cli.transcripts.json.

Where each format comes from:
- `initialize` control request and its `control_response`, the `session_state_changed` frames (sent only
  when CLAUDE_CODE_SDK_READS_SESSION_STATE=1, marked `sdk_host_only`), the `system`/`init` frame and the
  `result` frame's fields (`duration_api_ms`, `usage`, `modelUsage`, `permission_denials`,
  `terminal_reason`, `errors`): captured from the real CLI bundled with claude-agent-sdk 0.2.189
  (Claude Code 2.1.332), run offline with the SDK's flags; the initialize answer is trimmed to the keys
  the SDK reads (claude_agent_sdk/_internal/query.py `initialize`, client.py `get_server_info`).
- A refused resume: also captured from 2.1.332: "No conversation found with session ID: <id>" on
  stderr, a `result` with subtype `error_during_execution` and that text in `errors`, exit 1, sent
  before the initialize answer (query.py: "an `initialize` still in flight when the CLI reports an error
  result during startup (e.g. a refused resume)"). A resumed session keeps its id, as 2.1.332 does.
- `assistant` / `user` frames: a recorded Claude Code 2.1.4 stream-json transcript (public): one frame
  per content block, every frame of one API call carrying the same `message.id` and `usage`; tool
  results as `user` frames with `tool_result` blocks and `tool_use_result`; parsed per
  claude_agent_sdk/_internal/message_parser.py.
- `can_use_tool` control request (sent only with `--permission-prompt-tool stdio`, as the SDK asks for
  when a `can_use_tool` callback is set: types.py `_configure_can_use_tool`): the fields of
  types.py `SDKControlPermissionRequest`; the answer is `{"behavior": "allow", "updatedInput": ...}` or
  `{"behavior": "deny", "message": ...}` (query.py `_handle_control_request`). A denied tool's result is
  an error `tool_result` carrying the deny message, and the denial is listed in `permission_denials`.
- Error results `error_max_turns` / `error_max_budget_usd` with `is_error` and `errors`, then exit 1:
  claude_agent_sdk/_errors.py `ResultError` and code.claude.com/docs/en/headless (the wording of
  `errors` is the stand-in's own).

Choosing a scenario: a prompt line `claude-standin: {"scenario": "permission", "usage": {...},
"cost_usd": 0.01}` (JSON; every key optional), else $CLAUDE_STANDIN_SCENARIO, else "success". Usage and
cost default to the transcript file's; the usage is split across the run's API calls and summed exactly
in the result, so a test can add up what each task reported.

Sessions live in $CLAUDE_STANDIN_DIR/claude-sessions.json (locked): every session created or resumed,
and one entry per run in `runs` (session, resumed id, scenario, usage, cost), so a test can assert that a
task resumed an earlier task's session, and what the runs cost in all.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

VERSION = "2.1.332"
HERE = Path(__file__).resolve().parent
TRANSCRIPTS = json.loads((HERE / "claude_cli.transcripts.json").read_text())
PERMISSION_MODES = ["acceptEdits", "auto", "bypassPermissions", "default", "manual", "dontAsk", "plan"]
EDIT_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit"}
USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


class CliParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # the real CLI's wording and status, not argparse's
        if "unrecognized arguments" in message:
            message = f"unknown option '{message.split(': ', 1)[1].split()[0]}'"
        sys.stderr.write(f"error: {message}\n")
        sys.exit(1)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = CliParser(prog="claude", add_help=False, allow_abbrev=False)
    p.add_argument("--version", "-v", action="store_true")
    p.add_argument("--print", "-p", action="store_true")
    p.add_argument("--output-format", choices=["text", "json", "stream-json"], default="text")
    p.add_argument("--input-format", choices=["text", "stream-json"], default="text")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--system-prompt")
    p.add_argument("--system-prompt-file")
    p.add_argument("--append-system-prompt")
    p.add_argument("--tools")
    p.add_argument("--allowedTools", "--allowed-tools", default="")
    p.add_argument("--disallowedTools", "--disallowed-tools", default="")
    p.add_argument("--max-turns", type=int)
    p.add_argument("--max-budget-usd", type=float)
    p.add_argument("--model")
    p.add_argument("--fallback-model")
    p.add_argument("--permission-prompt-tool")
    p.add_argument("--permission-mode", choices=PERMISSION_MODES)
    p.add_argument("--resume", "-r")
    p.add_argument("--continue", "-c", action="store_true")
    p.add_argument("--session-id")
    p.add_argument("--fork-session", action="store_true")
    p.add_argument("--settings")
    p.add_argument("--setting-sources")
    p.add_argument("--add-dir", action="append", default=[])
    p.add_argument("--mcp-config")
    p.add_argument("--strict-mcp-config", action="store_true")
    p.add_argument("--include-partial-messages", action="store_true")
    return p.parse_args(argv)


def send(frame: dict) -> None:
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def read_frame() -> dict | None:
    line = sys.stdin.readline()
    while line and not line.strip():
        line = sys.stdin.readline()
    return json.loads(line) if line else None


@contextlib.contextmanager
def session_store():
    """The stand-in's own session records, locked: several runs may share one directory."""
    root = Path(os.environ.get("CLAUDE_STANDIN_DIR") or Path(tempfile.gettempdir()) / f"claude-standin-{os.getuid()}")
    root.mkdir(parents=True, exist_ok=True)
    path = root / "claude-sessions.json"
    with open(root / "claude-sessions.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(path.read_text()) if path.exists() else {"sessions": {}, "log": [], "runs": []}
        yield data
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(path)


def choose(prompt: str) -> dict:
    chosen: dict = {}
    for line in prompt.splitlines():
        if line.strip().startswith("claude-standin:"):
            chosen = json.loads(line.split(":", 1)[1])
    scenario = chosen.get("scenario") or os.environ.get("CLAUDE_STANDIN_SCENARIO") or "success"
    usage = {**TRANSCRIPTS["defaults"]["usage"], **chosen.get("usage", {})}
    cost = chosen.get("cost_usd", TRANSCRIPTS["defaults"]["cost_usd"])
    return {"scenario": scenario, "usage": usage, "cost_usd": cost}


def split_usage(total: dict, calls: int) -> list[dict]:
    """The run's usage spread over its API calls, the remainder on the last, so the calls add up exactly."""
    parts = []
    for i in range(calls):
        part = {}
        for key in USAGE_KEYS:
            share = total[key] // calls
            part[key] = share + (total[key] - share * calls if i == calls - 1 else 0)
        parts.append(part)
    return parts


def api_usage(part: dict) -> dict:
    return {
        **part,
        "cache_creation": {
            "ephemeral_5m_input_tokens": part["cache_creation_input_tokens"],
            "ephemeral_1h_input_tokens": 0,
        },
        "service_tier": "standard",
    }


class Conversation:
    def __init__(self, args: argparse.Namespace, session_id: str, model: str) -> None:
        self.args, self.session_id, self.model = args, session_id, model
        self.cwd = os.getcwd()
        self.state_frames = os.environ.get("CLAUDE_CODE_SDK_READS_SESSION_STATE") == "1"
        self.allowed = {t.strip() for t in args.allowedTools.replace(" ", ",").split(",") if t.strip()}
        self.denials: list[dict] = []
        self.decision: str | None = None
        self.last_text = ""
        self.pending_tools: list[dict] = []

    def fill(self, value):
        if isinstance(value, str):
            return value.replace("{cwd}", self.cwd).replace("{budget}", str(self.args.max_budget_usd))
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        if isinstance(value, dict):
            return {k: self.fill(v) for k, v in value.items()}
        return value

    def state(self, state: str) -> None:
        if self.state_frames:
            send(
                {
                    "type": "system",
                    "subtype": "session_state_changed",
                    "state": state,
                    "sdk_host_only": True,
                    "uuid": str(uuid.uuid4()),
                    "session_id": self.session_id,
                }
            )

    def init_frame(self) -> None:
        send(
            {
                "type": "system",
                "subtype": "init",
                "cwd": self.cwd,
                "session_id": self.session_id,
                "tools": ["Task", "Bash", "Edit", "Glob", "Grep", "NotebookEdit", "Read", "WebFetch", "Write"],
                "mcp_servers": [],
                "model": self.model,
                "permissionMode": self.args.permission_mode or "default",
                "slash_commands": ["compact", "context", "cost", "init", "review"],
                "apiKeySource": "none",
                "claude_code_version": VERSION,
                "output_style": "default",
                "agents": ["general-purpose", "Explore", "Plan"],
                "skills": [],
                "plugins": [],
                "uuid": str(uuid.uuid4()),
                "original_cwd": self.cwd,
                "additional_directories": self.args.add_dir,
            }
        )

    def permitted(self, tool: dict, tool_use_id: str) -> tuple[bool, str]:
        """Whether a tool use that needs permission may run, asking the SDK host when it offered to answer."""
        mode = self.args.permission_mode
        if mode == "bypassPermissions" or tool["name"] in self.allowed:
            return True, ""
        if mode == "acceptEdits" and tool["name"] in EDIT_TOOLS:
            return True, ""
        if self.args.permission_prompt_tool != "stdio":
            return False, f"Claude requested permissions to use {tool['name']}, but you haven't granted it yet."
        request_id = str(uuid.uuid4())
        self.state("requires_action")
        send(
            {
                "type": "control_request",
                "request_id": request_id,
                "request": {
                    "subtype": "can_use_tool",
                    "tool_name": tool["name"],
                    "input": tool["input"],
                    "permission_suggestions": [
                        {
                            "type": "addRules",
                            "rules": [{"toolName": tool["name"], "ruleContent": tool["input"].get("command")}],
                            "behavior": "allow",
                            "destination": "localSettings",
                        }
                    ],
                    "blocked_path": None,
                    "tool_use_id": tool_use_id,
                    "title": f"Claude wants to run {tool['input'].get('command', tool['name'])}",
                    "display_name": "Run command",
                },
            }
        )
        while True:
            frame = read_frame()
            if frame is None:  # the host went away mid-question: nothing may run
                sys.exit(1)
            if frame.get("type") == "control_response" and frame["response"].get("request_id") == request_id:
                break
            if frame.get("type") == "control_request":
                answer_control(frame)
        self.state("running")
        response = frame["response"]
        if response.get("subtype") == "error":
            return False, response.get("error", "permission request failed")
        decision = response.get("response", {})
        if decision.get("behavior") == "allow":
            tool["input"] = decision.get("updatedInput", tool["input"])
            return True, ""
        return False, decision.get("message") or "Permission denied"

    def run(self, steps: list[dict], usage: dict, cost: float) -> dict:
        # Exactly one of the `when` alternatives runs, so it counts as one call.
        calls = sum(1 for s in steps if "api_call" in s and not s.get("when"))
        calls += any("api_call" in s and s.get("when") for s in steps)
        parts = split_usage(usage, calls)
        turns = 0
        for step in steps:
            if step.get("when") and step["when"] != self.decision:
                continue
            if "api_call" in step:
                self.api_call(step["api_call"], parts[turns])
                turns += 1
            elif "tool_results" in step:
                self.tool_results(step["tool_results"])
            elif step.get("hang"):
                record(f"hanging pid {os.getpid()}")
                while True:  # deaf to stdin and to everything but a signal, like a wedged tool call
                    time.sleep(3600)
            elif "crash" in step:
                sys.stderr.write(step["crash"]["stderr"] + "\n")
                sys.stderr.flush()
                os._exit(step["crash"]["exit"])
            elif "result" in step:
                return self.result(step["result"], usage, cost, turns)
        raise SystemExit("transcript without a result")

    def api_call(self, blocks: list[dict], usage: dict) -> None:
        message_id = f"msg_{uuid.uuid4().hex[:24]}"
        self.pending_tools = []
        for raw in blocks:
            block = self.fill(raw)
            needs_permission = block.pop("needs_permission", False)
            if block["type"] == "tool_use":
                block = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", **block}
                self.pending_tools.append({**block, "needs_permission": needs_permission})
            elif block["type"] == "text":
                self.last_text = block["text"]
            send(
                {
                    "type": "assistant",
                    "message": {
                        "model": self.model,
                        "id": message_id,
                        "type": "message",
                        "role": "assistant",
                        "content": [block],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": api_usage(usage),
                        "context_management": None,
                    },
                    "parent_tool_use_id": None,
                    "session_id": self.session_id,
                    "uuid": str(uuid.uuid4()),
                }
            )

    def tool_results(self, results: list[dict]) -> None:
        for tool, result in zip(self.pending_tools, results, strict=False):
            content, is_error = self.fill(result.get("content", "")), bool(result.get("is_error"))
            if tool["needs_permission"]:
                allowed, message = self.permitted(tool, tool["id"])
                self.decision = "allowed" if allowed else "denied"
                if not allowed:
                    content, is_error = message, True
                    self.denials.append(
                        {"tool_name": tool["name"], "tool_use_id": tool["id"], "tool_input": tool["input"]}
                    )
                record(f"permission {tool['name']} {self.decision}")
            send(
                {
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [
                            {"tool_use_id": tool["id"], "type": "tool_result", "content": content, "is_error": is_error}
                        ],
                    },
                    "parent_tool_use_id": None,
                    "session_id": self.session_id,
                    "uuid": str(uuid.uuid4()),
                    "tool_use_result": {"stdout": content, "stderr": "", "interrupted": False}
                    if tool["name"] == "Bash"
                    else content,
                }
            )

    def result(self, spec: dict, usage: dict, cost: float, turns: int) -> dict:
        frame = {
            "type": "result",
            "subtype": spec["subtype"],
            "is_error": spec["is_error"],
            "duration_ms": 1200 + 300 * turns,
            "duration_api_ms": 900 + 250 * turns,
            "num_turns": turns,
            "stop_reason": "end_turn",
            "session_id": self.session_id,
            "total_cost_usd": cost,
            "usage": {**api_usage(usage), "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}},
            "modelUsage": {
                self.model: {
                    "inputTokens": usage["input_tokens"],
                    "outputTokens": usage["output_tokens"],
                    "cacheReadInputTokens": usage["cache_read_input_tokens"],
                    "cacheCreationInputTokens": usage["cache_creation_input_tokens"],
                    "webSearchRequests": 0,
                    "costUSD": cost,
                    "contextWindow": 200000,
                    "maxOutputTokens": 64000,
                }
            },
            "permission_denials": self.denials,
            "terminal_reason": spec.get("terminal_reason"),
            "uuid": str(uuid.uuid4()),
        }
        if spec["subtype"] == "success":
            frame["result"] = self.last_text
        if spec.get("errors"):
            frame["errors"] = self.fill(spec["errors"])
        send(frame)
        self.state("idle")
        return frame


def record(line: str) -> None:
    with session_store() as store:
        store["log"].append(line)


def answer_control(frame: dict) -> None:
    request = frame.get("request", {})
    subtype = request.get("subtype")
    if subtype == "initialize":
        answer = {
            "commands": [],
            "agents": [],
            "output_style": "default",
            "available_output_styles": ["default"],
            "models": [],
            "account": {"tokenSource": "none", "apiProvider": "firstParty"},
            "pid": os.getpid(),
            "claude_code_version": VERSION,
            "current_permission_mode": "default",
            "hook_on_failure_supported": True,
            "session_state": "idle",
            "capabilities": [],
        }
    elif subtype in ("interrupt", "set_permission_mode", "set_model"):
        answer = {}
    else:
        send(
            {
                "type": "control_response",
                "response": {
                    "subtype": "error",
                    "request_id": frame["request_id"],
                    "error": f"Unsupported control request subtype: {subtype}",
                },
            }
        )
        return
    send(
        {
            "type": "control_response",
            "response": {"subtype": "success", "request_id": frame["request_id"], "response": answer},
        }
    )


def refuse_resume(session_id: str) -> None:
    sys.stderr.write(f"No conversation found with session ID: {session_id}\n")
    send(
        {
            "type": "result",
            "subtype": "error_during_execution",
            "duration_ms": 0,
            "duration_api_ms": 0,
            "is_error": True,
            "num_turns": 0,
            "stop_reason": None,
            "session_id": session_id,
            "total_cost_usd": 0,
            "usage": api_usage(dict.fromkeys(USAGE_KEYS, 0)),
            "modelUsage": {},
            "permission_denials": [],
            "uuid": str(uuid.uuid4()),
            "errors": [f"No conversation found with session ID: {session_id}"],
        }
    )
    sys.exit(1)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.version:
        print(f"{VERSION} (Claude Code)")
        return 0
    if args.input_format != "stream-json" or args.output_format != "stream-json" or not args.verbose:
        sys.stderr.write(
            "error: this stand-in only speaks --input-format stream-json --output-format stream-json --verbose\n"
        )
        return 1
    resumed = args.resume
    if resumed:
        with session_store() as store:
            known = resumed in store["sessions"]
            if known:
                store["sessions"][resumed]["turns"] += 1
                store["log"].append(f"resumed {resumed}")
        if not known:
            refuse_resume(resumed)
    session_id = resumed or args.session_id or str(uuid.uuid4())
    model = args.model or TRANSCRIPTS["defaults"]["model"]
    conversation = Conversation(args, session_id, model)
    last_error = False
    while (frame := read_frame()) is not None:
        if frame.get("type") == "control_request":
            answer_control(frame)
            continue
        if frame.get("type") != "user":
            continue
        content = frame["message"]["content"]
        prompt = content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)
        chosen = choose(prompt)
        if not resumed:
            with session_store() as store:
                store["sessions"].setdefault(session_id, {"cwd": os.getcwd(), "turns": 1})
                store["log"].append(f"created {session_id}")
        conversation.state("running")
        conversation.init_frame()
        result = conversation.run(TRANSCRIPTS["scenarios"][chosen["scenario"]], chosen["usage"], chosen["cost_usd"])
        with session_store() as store:
            store["runs"].append(
                {
                    "session": session_id,
                    "resumed": resumed,
                    "scenario": chosen["scenario"],
                    "usage": chosen["usage"],
                    "cost_usd": chosen["cost_usd"],
                    "model": model,
                    "subtype": result["subtype"],
                    "cwd": os.getcwd(),
                    "prompt": prompt[:200],
                    # Which hub variables reached the CLI: a test checks that the node's credentials do not.
                    "commhub_env": sorted(k for k, v in os.environ.items() if k.startswith("COMMHUB_") and v),
                }
            )
        last_error = result["is_error"]
    # Like the real CLI: stdin closed ends the process, non-zero after an error result.
    return 1 if last_error else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
