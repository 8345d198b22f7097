"""`commhub-agent channel`: a Claude Code channel, a stdio MCP server that wakes the session.

It follows the hub's SSE feed for one alias and pushes each message meant for the model as a
`notifications/claude/channel` notification, and it offers the hub's own tools (proxied, with the
alias filled in). Claude Code spawns it from `.mcp.json`.

No event is shown twice or missed across restarts: the position of the last event handled is kept
in a state file, written right after the notification reaches stdout (see `state.Position`), and a
restarted channel resumes the feed from it with Last-Event-ID.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from commhub_agent import __version__
from commhub_agent.hub import FROM_SESSION_TOOLS, SELF_ALIAS_TOOLS, Backoff, Config, Hub, HubRefused, HubUnavailable
from commhub_agent.state import Position, default_state_dir, safe_name

CHANNEL_METHOD = "notifications/claude/channel"
# The feed's events a model should read; the rest (task_updated, session_updated, task_expired,
# lease_lost, approval_requested) only move the position on.
PUSHED = ("new_task", "new_message", "new_reply", "broadcast", "chained_reply", "new_open_task", "approval_updated")


def log(message: str) -> None:
    print(f"commhub-agent channel: {message}", file=sys.stderr, flush=True)


def instructions(alias: str) -> str:
    return f"""You are the CommHub agent "{alias}". Messages from the hub arrive as <channel source="commhub" ...> \
events; their attributes say what each one is:
- event: new_task (work for you), new_message (information, no answer needed), new_reply (an answer to a task \
you sent), broadcast (a message to every agent; treat like a task if it asks for work), chained_reply (a subtask \
you delegated was answered), new_open_task (an open task your skills cover, anyone's to take: claim_task with \
its task_id makes it yours, acknowledged: go on from step 2 below; a refusal task_claimed means another agent \
was first), approval_updated (a call of yours that answered pending_approval, held for a person's approval, \
was decided: status approved means it ran, with its result; rejected, expired or failed say why it did not).
- task_id: the task to act on; message_id: the inbox entry; from: who sent it; priority: high, normal or low; \
kind: the inbox type; needs: an open task's required skills; event_id: the hub's feed position (each event is \
delivered once).
For a new_task: 1) call ack_inbox with message_id (take it); 2) call report_status with status "working", \
task set to the task_id, and progress (0-100) as you go; 3) when done call report_completion with task set to \
the task_id and result set to what you did (at most 50000 characters); if you cannot do it, call send_reply \
with alias = the sender (from), in_reply_to = task_id, status "failed" and the reason. get_task shows a \
task's context. If you need a person's decision, call ask_operator with the task_id, your question and \
options, report_status "waiting_input", and wait: the answer arrives as a new_reply about the task. Use \
send_task to delegate, send_message for a note. You need not pass alias or resume_id to report_status, \
get_inbox, ack_inbox, report_completion, get_session_status or claim_task: they default to "{alias}". \
What you send (send_task, send_message, send_reply, send_ack, retry_task, cancel_task, reassign_task) is signed \
from_session "{alias}" unless you name another sender, so answers come back to you. Work on tasks in \
priority order; call get_inbox once at the start of a session for anything that arrived before it."""


def notification_for(event_id: int, kind: str, frame: dict[str, Any]) -> dict[str, Any]:
    """The channel notification for one feed event: the text to read, and its attributes."""
    payload = frame.get("payload") or {}
    if kind == "chained_reply":
        content = payload.get("result") or ""
        sender = payload.get("from_alias")
    elif kind == "approval_updated":
        content = f"Your held {payload.get('tool')} call ({payload.get('approval_id')}) is {payload.get('status')}"
        content += f": {payload['reason']}" if payload.get("reason") else "."
        sender = payload.get("decided_by")
    else:
        content = payload.get("content") or ""
        sender = payload.get("from_session")
    meta = {
        "event": kind,
        "event_id": event_id,
        "message_id": payload.get("message_id"),
        "approval_id": payload.get("approval_id"),
        "task_id": payload.get("task_id") or payload.get("parent_task_id"),
        "child_task_id": payload.get("child_task_id"),
        "status": payload.get("status"),
        "from": sender,
        "priority": payload.get("priority"),
        "kind": payload.get("type"),
        "needs": ",".join(payload["required_skills"]) if payload.get("required_skills") else None,
        "created_at": frame.get("created_at"),
    }
    # Claude Code takes meta keys that are identifiers and string values only.
    clean = {key: str(value) for key, value in meta.items() if value is not None}
    return {"jsonrpc": "2.0", "method": CHANNEL_METHOD, "params": {"content": content, "meta": clean}}


class Stdout:
    """The MCP wire (a private copy of fd 1): the SDK's writer and the channel's pushes share it.

    Writes are synchronous (no await inside), so within the event loop each line goes out whole and
    in order, and a pushed notification is on the pipe before its position is committed.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def _write(self, text: str) -> None:
        data = text.encode()
        while data:
            data = data[os.write(self.fd, data) :]

    async def write(self, text: str) -> None:  # the SDK's stdout_writer
        self._write(text)

    async def flush(self) -> None:
        pass

    def push(self, message: dict[str, Any], position: Position, event_id: int) -> None:
        position.prepare(event_id)  # the fsync happens before the write, not between it and the commit
        self._write(json.dumps(message, ensure_ascii=False) + "\n")
        position.commit()


class Stdin:
    """Lines from the client; notes when the session is initialized, so pushes never precede it.

    Read with wait_readable + os.read rather than a worker thread, so a SIGTERM can cancel a read.
    """

    def __init__(self, fd: int, ready: anyio.Event) -> None:
        self.fd = fd
        self._buffer = b""
        self._ready = ready

    def __aiter__(self) -> Stdin:
        return self

    async def __anext__(self) -> str:
        line = ""
        while not line.strip():  # blank lines between messages are no messages
            line = await self._next_line()
        if not self._ready.is_set() and any(
            marker in line for marker in ('"notifications/initialized"', '"tools/list"', '"tools/call"')
        ):
            self._ready.set()
        return line

    async def _next_line(self) -> str:
        while b"\n" not in self._buffer:
            await anyio.wait_readable(self.fd)
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                if not self._buffer:
                    raise StopAsyncIteration
                chunk = b"\n"
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\n")
        return raw.decode("utf-8", errors="replace")


class Channel:
    def __init__(self, config: Config, *, state_dir: Path, heartbeat: float) -> None:
        self.config = config
        self.hub = Hub(config)
        self.position = Position(state_dir / f"{safe_name(config.alias)}.channel.json")
        self.heartbeat = heartbeat
        self.ready = anyio.Event()
        self.connected = False
        self._tools: list[types.Tool] | None = None
        # What the session last said about itself; heartbeats repeat it rather than overwrite it.
        self.status: dict[str, Any] = {"status": "idle"}
        # One report_status at a time: a heartbeat sent with what was said before a report, and
        # answered after it, would undo it (the session idle again, its progress gone).
        self.reporting = anyio.Lock()

    def identity(self) -> dict[str, Any]:
        return {
            "alias": self.config.alias,
            "resume_id": self.config.resume_id,
            "agent": "claude-code",
            "hostname": socket.gethostname(),
            "project_dir": os.getcwd(),
            "version": f"commhub-agent {__version__}",
        }

    # --- the hub's tools, proxied

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        if self._tools is None:
            self._tools = [self._adapt(tool) for tool in await self.hub.list_tools()]
        return types.ListToolsResult(tools=self._tools)

    def _adapt(self, tool: dict[str, Any]) -> types.Tool:
        tool = json.loads(json.dumps(tool))
        filled = {"from_session"} if tool["name"] in FROM_SESSION_TOOLS else set()
        if tool["name"] in SELF_ALIAS_TOOLS:
            filled |= {"alias", "resume_id"} if tool["name"] == "report_status" else {"alias"}
        if not filled:
            return types.Tool.model_validate(tool, by_alias=True)
        schema = tool.setdefault("inputSchema", {"type": "object"})
        schema["required"] = [name for name in schema.get("required", []) if name not in filled]
        for name in filled:
            if name in schema.get("properties", {}):
                prop = schema["properties"][name]
                prop["description"] = f"{prop.get('description', '')} Defaults to this session's".strip() + (
                    " resume id." if name == "resume_id" else f" alias {self.config.alias!r}."
                )
        return types.Tool.model_validate(tool, by_alias=True)

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        if params.name in SELF_ALIAS_TOOLS:
            arguments.setdefault("alias", self.config.alias)
        if params.name in FROM_SESSION_TOOLS and not arguments.get("from_session"):
            arguments["from_session"] = self.config.alias  # the sender, so an answer comes back here
        if params.name == "report_status":
            for key, value in self.identity().items():
                arguments.setdefault(key, value)
        try:
            if params.name == "report_status":
                async with self.reporting:
                    result = await self.hub.call_raw(params.name, arguments)
                    if not result.get("isError"):
                        self.status = {k: arguments[k] for k in ("status", "task", "progress") if k in arguments}
            else:
                result = await self.hub.call_raw(params.name, arguments)
        except (HubUnavailable, HubRefused) as exc:
            refusal = {
                "ok": False,
                "error": "hub_unavailable",
                "message": f"The hub at {self.config.hub} did not answer ({exc}); try again in a moment.",
            }
            return types.CallToolResult(
                content=[types.TextContent(text=json.dumps(refusal))], structured_content=refusal, is_error=True
            )
        return types.CallToolResult.model_validate(result, by_alias=True)

    # --- the feed

    async def follow(self) -> None:
        """Push the feed's events, from the saved position, for as long as the channel runs."""
        cursor = self.position.load()
        backoff = Backoff()
        while True:
            try:
                async for event_id, kind, frame in self.hub.events(self.config.alias, cursor):
                    if not self.connected:
                        self.connected = True
                        log(f"following {self.config.hub}/events/{self.config.alias} after {cursor}")
                    backoff.reset()
                    await self.ready.wait()
                    if kind in PUSHED:
                        self.stdout.push(notification_for(event_id, kind, frame), self.position, event_id)
                    else:
                        self.position.save(event_id)
                    cursor = event_id
            except HubUnavailable as exc:
                self.connected = False
                log(f"feed interrupted ({exc}); reconnecting in {backoff.delay:.1f}s")
            except HubRefused as exc:
                self.connected = False
                log(f"the hub refused the feed ({exc}); retrying in {backoff.most:.0f}s")
                backoff.delay = backoff.most
            await backoff.sleep()

    async def heartbeats(self) -> None:
        while True:
            try:
                async with self.reporting:
                    await self.hub.call("report_status", **{**self.identity(), **self.status})
            except (HubUnavailable, HubRefused) as exc:
                log(f"heartbeat failed: {exc}")
            await anyio.sleep(self.heartbeat)

    async def offline(self) -> None:
        with anyio.move_on_after(5, shield=True):
            try:
                async with self.reporting:  # after a heartbeat still in flight, never before it
                    await self.hub.call("report_status", **{**self.identity(), "status": "offline"})
            except (HubUnavailable, HubRefused) as exc:
                log(f"could not report offline: {exc}")

    async def serve(self) -> None:
        # The wire keeps a private copy of fd 1; fd 1 itself goes to stderr, so a stray print can
        # never corrupt the protocol.
        wire = os.dup(1)
        os.dup2(2, 1)
        self.stdout = Stdout(wire)
        server: Server[Any] = Server(
            "commhub",
            version=__version__,
            instructions=instructions(self.config.alias),
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
        )
        options = server.create_initialization_options(experimental_capabilities={"claude/channel": {}})
        from mcp.server.stdio import stdio_server

        try:
            async with anyio.create_task_group() as group:

                async def stop_on_signal() -> None:
                    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                        async for _ in signals:
                            group.cancel_scope.cancel()
                            return

                group.start_soon(stop_on_signal)
                group.start_soon(self.follow)
                group.start_soon(self.heartbeats)
                async with stdio_server(stdin=Stdin(0, self.ready), stdout=self.stdout) as (read, write):  # type: ignore[arg-type]
                    await server.run(read, write, options)
                group.cancel_scope.cancel()  # the client closed stdin: the session is over
        finally:
            await self.offline()
            await self.hub.aclose()


def run_channel(config: Config, *, state_dir: Path | None, heartbeat: float) -> None:
    channel = Channel(config, state_dir=state_dir or default_state_dir(), heartbeat=heartbeat)
    anyio.run(channel.serve)
