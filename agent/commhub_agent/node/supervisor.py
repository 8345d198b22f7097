"""`commhub-agent node --config node.toml`: the agents a machine runs, supervised by one process.

Each agent (an alias) takes task deliveries from its inbox as `commhub-agent run` does, and runs
each in its own workspace through its runtime adapter (claude, codex, command):

    get_task (still ours and waiting?) → ack_inbox → journal "start" → workspace → runtime started
    → report_status working (the "started" receipt) → progress, usage … → finished → workspace
    closed (branch, head, diffstat) → final reports journalled → sent in order by the outbox

Every report goes through the outbox (journal, then send, in order, with a replay key), so a hub
outage delays reports but loses none, and a task that finished meanwhile is reported as finished.
A delivery the journal shows started but not finished was cut off by a crash: it is failed as
crashed with a retry hint, never run again by itself.

Watchdogs per run: `timeout` stops it outright; `stall_after` without a runtime event reports the
agent blocked and asks the task's sender and the operators kill / wait / retry (ask_operator), and
does what they answer; a run past its budget (tokens or USD) is stopped and failed "budget exceeded".

Before any agent starts, the hub says who the token is (GET /api/v1/whoami): a token bound to
aliases serves only the agents its binding covers, an unbound one none in a strict network
(commhub_agent.node.identity). An agent it cannot serve is refused like a wrong key, naming
`agents.<alias>` and the binding: the node does not start, and a reload is not applied.

Signals: SIGHUP reloads the config (agents added, removed or changed; running tasks are left to
finish as they are); SIGTERM or SIGINT drains: no new task, running ones get `stop_grace` seconds,
then are stopped and failed with a retry hint.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import shlex
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from commhub_agent import __version__
from commhub_agent.hub import RESULT_MAX, TEXT_MAX, Backoff, Config, Hub, HubRefused, HubUnavailable, persist, truncate
from commhub_agent.node.commands import Redactor, Tails
from commhub_agent.node.config import (
    AgentConfig,
    NodeConfig,
    describe_error,
    diff_configs,
    load_config,
    restart_needed,
)
from commhub_agent.node.identity import TokenIdentity, ask_identity, identity_refusals
from commhub_agent.node.outbox import Outbox
from commhub_agent.node.runtime import ConfigError, Finished, Job, Progress, Run, Runtime, Started, Usage, UsageSoFar
from commhub_agent.node.runtimes import RUNTIMES
from commhub_agent.node.workspace import (
    WorkspaceError,
    close_workspace,
    open_workspace,
    prepare_spare,
    prune_workspaces,
)
from commhub_agent.process import kill_orphans

ANSWER_CONTEXT = "The answer to your question "  # how the hub words an answer's context (hub_tasks.questions)
STATUS_EVERY = 2.0  # seconds between progress reports of one run (the hub limits writes; the latest wins)
NODE_REPORT_EVERY = 60.0
RELOAD_ASK = 10.0  # seconds a reload waits for the hub to say who the token is, before it goes on without
HEARTBEAT_EVERY = 120.0
STALL_CHOICES = ["kill", "wait", "retry"]
# The feed events that put something in the inbox: a task, or a reply (the answer to a question).
INBOX_EVENTS = frozenset({"new_task", "new_reply", "new_message"})
# A new_task push with these keys holds all a run needs (hub_core.events): it starts without get_inbox.
PUSHED_KEYS = frozenset(
    {"message_id", "type", "priority", "content", "context", "from_session", "task_id", "budget_usd", "budget_tokens"}
)


def log(message: str) -> None:
    print(f"commhub-agent node: {message}", file=sys.stderr, flush=True)


def build_runtime(agent: AgentConfig, state_dir: Path) -> Runtime:
    key = f"agents.{agent.alias}.options"
    cls = RUNTIMES[agent.runtime]()
    if agent.runtime == "command":
        return cls(agent.options, key=key, command=agent.command)  # type: ignore[call-arg]
    if agent.runtime == "codex":  # each thread's usage total so far, kept with the node's state
        return cls(agent.options, key=key, threads_file=state_dir / "codex-threads.json")  # type: ignore[call-arg]
    return cls(agent.options, key=key)


class Sessions:
    """The runtime sessions to resume, by key ("alias:A", "chain:A:ROOT"), and each task's chain
    root, in one small JSON file replaced atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.data: dict[str, dict[str, str]] = json.loads(path.read_text())
        except (FileNotFoundError, ValueError):
            self.data = {}
        self.data.setdefault("sessions", {})
        self.data.setdefault("roots", {})

    def key(self, agent: AgentConfig, task: dict[str, Any]) -> str | None:
        if agent.session == "task" or agent.runtime == "command":
            return None
        if agent.session == "chain":
            roots = self.data["roots"]
            parent = task.get("parent_task_id")
            root = roots.get(parent, parent) if parent else task["task_id"]
            roots[task["task_id"]] = root
            return f"chain:{agent.alias}:{root}"
        return f"alias:{agent.alias}"

    def get(self, key: str | None) -> str | None:
        return self.data["sessions"].get(key) if key else None

    def set(self, key: str | None, session: str | None) -> None:
        if key and session and self.data["sessions"].get(key) != session:
            self.data["sessions"][key] = session
            self.save()

    def forget(self, alias: str) -> int:
        """restart_session: the alias's sessions are forgotten, so its next task starts a fresh one."""
        gone = [k for k in self.data["sessions"] if k == f"alias:{alias}" or k.startswith(f"chain:{alias}:")]
        for key in gone:
            del self.data["sessions"][key]
        self.save()
        return len(gone)

    def save(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.data))
        os.replace(tmp, self.path)


@dataclass
class Delivery:
    message_id: str
    task: dict[str, Any]
    sender: str | None
    run: Run | None = None
    started: float = field(default_factory=time.monotonic)
    last_event: float = field(default_factory=time.monotonic)
    last_text: str = "started"
    asking: int = 0  # questions open about this run: it waits for a person, it is not stalled
    # why the node stopped the run: kill, retry, budget, timeout, stopped; command (node_command stop),
    # cancelled (cancel_task while it ran)
    verdict: str | None = None
    reports: int = 0
    reported_at: float = 0.0  # when its progress was last reported
    workspace: Path | None = None  # its folder (worktree top or dir), never pruned while it runs
    lines: Any = field(default_factory=list)  # its last output lines (Tails), for a tail command

    @property
    def task_id(self) -> str:
        return self.task["task_id"]

    def key(self, step: str) -> str:
        return f"{self.message_id}/{step}"


@dataclass
class Answer:
    ready: anyio.Event = field(default_factory=anyio.Event)
    text: str = ""


class Agent:
    """One alias of the node: its intake, its running deliveries, its runtime."""

    def __init__(self, node: Node, config: AgentConfig) -> None:
        self.node, self.config = node, config
        self.runtime = build_runtime(config, node.config.state_dir)
        self.running: dict[str, Delivery] = {}
        self.passed: set[str] = set()  # messages looked at and left alone (not ours to run)
        self.sessions_in_use: set[str] = set()
        self.retiring = False  # removed from the config: takes no new task, ends when idle
        self.fetching = anyio.CancelScope()
        self.doorbell = anyio.Event()
        self.doorbell.set()  # at start: whatever queued while nobody was there
        self.fetch = True  # the inbox may hold what no push announced: get_inbox at the next round
        self.pushed: list[dict[str, Any]] = []  # tasks the feed pushed, complete: run without a fetch
        self.freed = anyio.Event()
        self.sse_up = False
        self.paused = False  # node_command pause: takes no new task until resumed

    @property
    def alias(self) -> str:
        return self.config.alias

    def ring(self, *, fetch: bool = True) -> None:
        self.fetch = self.fetch or fetch
        self.doorbell.set()

    def reconfigure(self, config: AgentConfig) -> None:
        """SIGHUP changed this agent: new deliveries run with the new config; running ones go on."""
        self.runtime = build_runtime(config, self.node.config.state_dir)
        self.config = config
        self.ring()
        self.freed.set()

    @property
    def held(self) -> bool:
        return self.paused or self.node.paused

    def retire(self) -> None:
        """Take no new task (removed from the config, or the node drains); end once idle."""
        self.retiring = True
        self.fetching.cancel()
        self.freed.set()

    # --- intake

    async def serve(self) -> None:
        async with anyio.create_task_group() as group:
            self.group = group
            group.start_soon(self.watch_feed)
            group.start_soon(self.make_spare)
            async with anyio.create_task_group() as work:
                while not (self.node.stopping or self.retiring):
                    slots = self.config.concurrency - len(self.running)
                    if slots <= 0 or self.held:  # full, or paused by a command: wait for a change
                        with anyio.move_on_after(30):
                            await self.freed.wait()
                        self.freed = anyio.Event()
                        continue
                    messages: list[dict[str, Any]] = []
                    with anyio.CancelScope() as self.fetching:  # a drain or retirement ends a wait at once
                        try:
                            messages = await self.next_messages(slots)
                        except HubRefused as exc:
                            log(f"{self.alias}: the hub refused get_inbox ({exc}); this agent stops taking tasks")
                            break
                    for message in messages:
                        self.running[message["id"]] = Delivery(message["id"], {}, message.get("from_session"))
                        work.start_soon(self.deliver, message)
                # Draining or retired: the work group waits for the running deliveries.
            group.cancel_scope.cancel()
        self.node.agent_ended(self)

    async def watch_feed(self) -> None:
        """The alias's SSE feed as a doorbell: any task event makes the intake look at the inbox now."""
        backoff = Backoff()
        while True:
            try:
                async for _id, kind, frame in self.node.hub.events(self.alias, None):
                    self.sse_up = True
                    backoff.reset()
                    payload = frame.get("payload") or {}
                    if kind == "node_command":
                        self.node.command(payload)
                    elif kind == "task_updated" and payload.get("to_status") == "cancelled":
                        # cancel_task on a running task stops its process too (beside the feed: a stop
                        # waits out its grace period)
                        self.node.group.start_soon(
                            partial(self.node.stop_run, payload.get("task_id"), verdict="cancelled")
                        )
                    elif kind == "new_task" and PUSHED_KEYS <= payload.keys():
                        self.pushed.append(
                            {"id": payload["message_id"], **{k: payload[k] for k in PUSHED_KEYS - {"message_id"}}}
                        )
                        self.ring(fetch=False)
                    elif news(kind, payload, self.alias):
                        self.ring()
            except (HubUnavailable, HubRefused) as exc:
                log(f"{self.alias}: feed interrupted ({exc}); long-polling until it is back")
            self.sse_up = False
            self.ring()
            await backoff.sleep()

    async def next_messages(self, slots: int) -> list[dict[str, Any]]:
        wait = 0
        if not self.doorbell.is_set():
            if self.sse_up:
                with anyio.move_on_after(30):
                    await self.doorbell.wait()
            else:
                wait = 20  # long-poll: the fallback while the feed is down
        self.doorbell = anyio.Event()  # a ring while get_inbox is under way is news for the next round
        pushed, self.pushed = [m for m in self.pushed if self.new(m["id"])], []
        if pushed and not self.fetch and len(pushed) <= slots:
            return pushed  # the push said it all: no get_inbox round trip before the ack
        self.fetch = False
        inbox = await self.node.retry(
            lambda: self.node.hub.call("get_inbox", alias=self.alias, limit=100, wait_seconds=wait or None)
        )
        if not inbox.get("ok"):
            raise HubRefused(inbox)
        fresh = []
        for message in inbox["messages"]:
            mid = message["id"]
            if not self.new(mid):
                continue
            if message.get("type") == "task":
                fresh.append(message)
            elif await self.node.take_answer(self.alias, message):
                continue
            else:
                self.passed.add(mid)  # a reply or message for whoever reads this inbox by hand
        if len(fresh) > slots:
            self.ring()  # more waits than there are slots: the next freed slot fetches at once
        return fresh[:slots]

    def new(self, message_id: str) -> bool:
        return not (message_id in self.running or message_id in self.passed or message_id in self.node.outbox.started)

    # --- one delivery

    async def deliver(self, message: dict[str, Any]) -> None:
        """Take the delivery (ack_inbox), then run it. No get_task first: the hub withdraws the inbox
        row of a task cancelled or reassigned, so an ack that succeeds means the task is ours to run,
        and the inbox row carries what the run needs (text, context, priority, budgets)."""
        delivery = self.running[message["id"]]
        delivery.task = {
            "task_id": message.get("task_id") or message["id"],
            "to_name": self.alias,
            **{key: message.get(key) for key in ("content", "context", "priority", "budget_usd", "budget_tokens")},
        }
        try:
            with anyio.CancelScope(shield=True):  # an ack the hub made must reach the journal
                if not await self.take(delivery.message_id):
                    self.passed.add(delivery.message_id)
                    return  # withdrawn meanwhile (cancelled, reassigned) or taken by another node
                self.node.outbox.begin(
                    delivery.message_id, alias=self.alias, task_id=delivery.task_id, sender=delivery.sender
                )
            if self.config.session == "chain":  # the parent chain is on the task, not the inbox row
                found = await self.node.retry(lambda: self.node.hub.call("get_task", task_id=delivery.task_id))
                delivery.task["parent_task_id"] = (found.get("task") or {}).get("parent_task_id")
            await self.execute(delivery)
        finally:
            self.running.pop(delivery.message_id, None)
            self.ring()  # a freed slot looks at the inbox at once
            self.freed.set()
            self.node.slots_changed()

    async def take(self, message_id: str) -> bool:
        """ack_inbox, retried with its replay key: an ack whose answer was lost is answered the
        same way when sent again."""
        answer = await self.node.retry(
            lambda: self.node.hub.call(
                "ack_inbox", alias=self.alias, message_id=message_id, idempotency_key=f"{message_id}/ack"
            )
        )
        return bool(answer.get("ok"))

    async def execute(self, delivery: Delivery) -> None:
        config, runtime = self.config, self.runtime  # a reload meanwhile does not change this run
        task = delivery.task
        try:
            workspace = await anyio.to_thread.run_sync(
                lambda: open_workspace(config, task_id=delivery.task_id, root=self.node.config.state_dir)
            )
        except WorkspaceError as exc:  # the task is failed with git's words; the node and its agents go on
            self.report_end(delivery, Finished(False, f"failed: no workspace for the task: {exc}", error="workspace"))
            return
        delivery.workspace = workspace.tree or workspace.path
        self.group.start_soon(self.make_spare)  # the next task's worktree, made while this one runs
        session_key = self.node.sessions.key(config, task)
        resume = None
        if session_key not in self.sessions_in_use:  # one run at a time continues a session
            resume = self.node.sessions.get(session_key)
            if session_key:
                self.sessions_in_use.add(session_key)
        env = self.environment(delivery, config)
        delivery.lines = self.node.tails.open(delivery.task_id, Redactor.for_run(env, self.node.hub_token))
        job = Job(
            task_id=delivery.task_id,
            alias=self.alias,
            prompt=task.get("content") or "",
            cwd=workspace.path,
            env=env,
            resume=resume,
            budget_usd=task.get("budget_usd") or config.budget_usd,
            budget_tokens=task.get("budget_tokens") or config.budget_tokens,
            ask=lambda question, choices: self.node.ask(delivery, question, choices),
            output=delivery.lines.append if runtime.echoes else None,
        )
        if task.get("context"):
            job.prompt += f"\n\nContext:\n{task['context']}"
        try:
            finished = await self.attempt(delivery, runtime, job, config, session_key)
            while delivery.verdict == "retry":  # the operator answered a stall with "retry"
                delivery.verdict = None
                finished = await self.attempt(delivery, runtime, job, config, session_key)
        finally:
            self.sessions_in_use.discard(session_key or "")
        with anyio.CancelScope(shield=True):  # a stop must not cut the reports in half
            summary = await anyio.to_thread.run_sync(lambda: close_workspace(workspace, config, ok=finished.ok))
            self.report_end(delivery, finished, summary)

    async def attempt(
        self, delivery: Delivery, runtime: Runtime, job: Job, config: AgentConfig, session_key: str | None
    ) -> Finished:
        """One run of the job, watched, until its Finished."""
        delivery.last_event, delivery.started = time.monotonic(), time.monotonic()
        try:
            run = delivery.run = await runtime.start(job)
        except Exception as exc:  # a missing binary, a refused option: this task fails, the node goes on
            return Finished(False, f"failed: the {runtime.name} runtime did not start: {exc}", error="start")
        finished = Finished(False, "the runtime ended without a result", error="no result")
        async with anyio.create_task_group() as watch:
            watch.start_soon(self.watchdog, delivery, config)
            try:
                async for event in run.events():
                    delivery.last_event = time.monotonic()
                    if isinstance(event, Started):
                        self.node.sessions.set(session_key, event.session)
                        self.report_status(delivery, status="working", progress=0, session_id=event.session)
                    elif isinstance(event, Progress):
                        delivery.last_text = event.text[:300]
                        if not runtime.echoes:
                            delivery.lines.append(event.text)
                        self.report_progress(delivery, event)
                    elif isinstance(event, UsageSoFar):
                        if over_budget(event.usage, job) and delivery.verdict is None:
                            delivery.verdict = "budget"
                            await run.stop()
                    elif isinstance(event, Finished):
                        finished = event
            except Exception as exc:  # an adapter's fault fails this task, never the node
                with anyio.CancelScope(shield=True):
                    await run.stop()
                finished = Finished(False, f"failed: the {runtime.name} runtime broke: {exc!r}", error="runtime")
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await run.stop()  # a process we started is a process we stop
                raise
            watch.cancel_scope.cancel()
        if finished.session:
            self.node.sessions.set(session_key, finished.session)
        if delivery.verdict == "budget" or (not finished.ok and finished.error == "budget"):
            # What the run said before it was stopped is kept: a runtime that reports usage only at the
            # end of a turn (codex) may have finished the work, and the sender should see it.
            said = f"\n--- the run's last words ---\n{finished.text}" if finished.text else ""
            finished = Finished(False, budget_text(finished.usage, job) + said, finished.usage, error="budget")
        return finished

    async def watchdog(self, delivery: Delivery, config: AgentConfig) -> None:
        """Stops a run past its timeout; asks what to do with one silent past stall_after."""
        deadline = delivery.started + config.timeout if config.timeout else None
        while True:
            now = time.monotonic()
            stall_at = delivery.last_event + config.stall_after
            wake = min(stall_at, deadline) if deadline else stall_at
            if now < wake:
                await anyio.sleep(wake - now)
                continue
            assert delivery.run is not None
            if deadline and now >= deadline:
                delivery.verdict = "timeout"
                await delivery.run.stop()
                return
            if delivery.asking:  # waiting for a person's answer is not a stall
                delivery.last_event = now
                continue
            await self.ask_about_stall(delivery, config)

    async def ask_about_stall(self, delivery: Delivery, config: AgentConfig) -> None:
        silent = time.monotonic() - delivery.last_event
        last = delivery.last_text
        self.report_status(delivery, status="blocked", output=f"no runtime event for {silent:.0f} s; last: {last}")
        choice = await self.node.ask(
            delivery,
            f"Task {delivery.task_id} on {self.alias} has shown no activity for {silent / 60:.1f} min "
            f"(last: {last}). kill: stop it and fail the task; wait: let it go on; retry: stop it and "
            "run it again from the start.",
            STALL_CHOICES,
        )
        assert delivery.run is not None
        if choice in ("kill", "retry"):
            delivery.verdict = choice
            await delivery.run.stop()
        else:
            delivery.last_event = time.monotonic()
            self.report_status(delivery, status="working", output=f"operator: wait (last: {last})")

    async def make_spare(self) -> None:
        try:
            await anyio.to_thread.run_sync(lambda: prepare_spare(self.config, root=self.node.config.state_dir))
        except WorkspaceError as exc:  # the next task makes its worktree the ordinary way
            log(f"{self.alias}: no spare worktree ({exc})")

    def environment(self, delivery: Delivery, config: AgentConfig) -> dict[str, str]:
        task = delivery.task
        env = {
            **os.environ,
            **config.env,
            "COMMHUB_ALIAS": self.alias,
            "COMMHUB_TASK_ID": delivery.task_id,
            "COMMHUB_MESSAGE_ID": delivery.message_id,
            "COMMHUB_TASK_FROM": delivery.sender or task.get("from_name") or "",
            "COMMHUB_TASK_PRIORITY": task.get("priority") or "normal",
            "COMMHUB_TASK_CONTEXT": task.get("context") or "",
            "COMMHUB_TASK": task.get("content") or "",
        }
        env.pop("COMMHUB_TOKEN", None)  # the agent's program gets no hub credentials of the node
        return env

    # --- reports (all through the outbox)

    def report_status(self, delivery: Delivery, **fields: Any) -> None:
        delivery.reports += 1
        self.node.outbox.put(
            (
                delivery.key(f"status-{delivery.reports}"),
                "report_status",
                self.node.identity(self, task=delivery.task_id, **fields),
            ),
            delivery=delivery.message_id,
        )

    def report_progress(self, delivery: Delivery, event: Progress) -> None:
        now = time.monotonic()
        if now - delivery.reported_at < STATUS_EVERY and event.percent != 100:
            return
        delivery.reported_at = now
        output = event.text + (f"\nfiles: {', '.join(event.files)}" if event.files else "")
        self.report_status(delivery, status="working", output=output, progress=event.percent)

    def report_end(self, delivery: Delivery, finished: Finished, workspace: dict[str, Any] | None = None) -> None:
        minutes = round((time.monotonic() - delivery.started) / 60, 3)
        usage = finished.usage
        text = finished.text or "(no output)"
        if not finished.ok and delivery.verdict in ("kill", "timeout", "stopped", "command", "cancelled"):
            text = stop_text(delivery, self.alias, self.config.timeout, self.node.stop_reason) + f"\n{text}"
        if workspace:
            branch = workspace["branch"] or f"none (detached HEAD; kept in {workspace.get('workspace')})"
            where = f"\n\n--- workspace ---\nbranch: {branch}\nhead: {workspace['head']}\n{workspace['diffstat']}"
            text = truncate(text, RESULT_MAX - len(where), keep="tail") + where
        completion = {
            "alias": self.alias,
            "task": delivery.task_id,
            "result": truncate(text, RESULT_MAX, keep="tail"),
            "duration_minutes": minutes,
            "tokens_in": usage.tokens_in or None,
            "tokens_out": usage.tokens_out or None,
            "cost_usd": usage.cost_usd,
            "model": usage.model,
        }
        reports = []
        if not finished.ok:
            reports.append(
                (
                    delivery.key("reply"),
                    "send_reply",
                    {
                        "alias": delivery.sender or "hub",
                        "text": truncate(text, TEXT_MAX, keep="tail"),
                        "in_reply_to": delivery.task_id,
                        "status": "failed",
                        "from_session": self.alias,
                    },
                )
            )
        reports.append((delivery.key("completion"), "report_completion", completion))
        self.node.outbox.put(*reports, delivery=delivery.message_id, final=True)


def news(kind: str, payload: dict[str, Any], alias: str) -> bool:
    """A feed event that may put work in this alias's inbox. Not its own ack or reports (a task_updated
    to acked, running, replied): those would cost a get_inbox each and find nothing new."""
    if kind in INBOX_EVENTS:
        return True
    if kind in ("task_updated", "lease_lost", "task_expired"):
        return payload.get("to_status") in (None, "delivered") and payload.get("to_name") in (None, alias)
    return False


def over_budget(usage: Usage, job: Job) -> bool:
    return bool(
        (job.budget_tokens and usage.tokens > job.budget_tokens)
        or (job.budget_usd and usage.cost_usd is not None and usage.cost_usd > job.budget_usd)
    )


def budget_text(usage: Usage, job: Job) -> str:
    caps = []
    if job.budget_usd:
        caps.append(f"${job.budget_usd:g}")
    if job.budget_tokens:
        caps.append(f"{job.budget_tokens} tokens")
    cost = f", ${usage.cost_usd:.4f}" if usage.cost_usd is not None else ""
    return (
        f"failed: budget exceeded (budget {' / '.join(caps) or 'of the runtime'}); the run was stopped after "
        f"{usage.tokens_in} tokens in, {usage.tokens_out} out{cost}"
    )


def stop_text(delivery: Delivery, alias: str, timeout: float | None, reason: str) -> str:
    if delivery.verdict == "timeout":
        return f"failed: timed out after {timeout:g} s on {alias}; it was stopped"
    if delivery.verdict == "kill":
        return f"failed: stopped by the operator's answer to a stall on {alias}"
    if delivery.verdict == "command":
        return f"failed: stopped on {alias} by an operator's command (node_command stop)"
    if delivery.verdict == "cancelled":
        return f"cancelled: task {delivery.task_id} was cancelled while it ran on {alias}; its run was stopped"
    return (
        f"failed: {reason} before task {delivery.task_id} finished; it was not run to the end and will not "
        "be run again by itself: retry_task sends it again"
    )


class Node:
    def __init__(self, config: NodeConfig, token: str) -> None:
        self.config = config
        self.hub = Hub(Config(hub=config.hub, token=token, alias=config.name))
        config.state_dir.mkdir(parents=True, exist_ok=True)
        self.outbox = Outbox(config.state_dir / "outbox.jsonl", log=log)
        self.sessions = Sessions(config.state_dir / "sessions.json")
        self.agents: dict[str, Agent] = {}
        self.answers: dict[str, Answer] = {}  # open questions by id
        self.stopping = False
        self.stop_reason = "node stopped"
        self.changed = anyio.Event()
        self.versions: dict[str, str | None] = {}
        self.token: TokenIdentity | None = None  # who the hub says the token is; None: not said
        self.hub_token = token  # never printed: a tail redacts it
        self.tails = Tails()
        self.paused = False  # node_command pause without an alias: no agent takes a new task
        self.commands_seen: set[str] = set()  # a node-wide command arrives once per agent's feed

    async def admitted(self) -> bool:
        """Whether the token may act as every agent of the config, as the hub says (waiting while it is
        unreachable: the node can do nothing without it). Refusals are printed like a wrong key."""
        # A SIGHUP while the hub is awaited would end the process (its default): it is noted, and the
        # config read again once the hub answers.
        hups: list[int] = []
        previous = signal.signal(signal.SIGHUP, lambda signum, frame: hups.append(signum))
        try:
            self.token = await self.retry(lambda: ask_identity(self.hub))
        except HubRefused as exc:
            log(f"$COMMHUB_TOKEN: the hub refused it ({exc}); give the node a token of this hub")
            return False
        finally:
            signal.signal(signal.SIGHUP, previous)
        if hups:
            self.reread()
        if self.token is None:
            log("the hub has no /api/v1/whoami (it predates token bindings): the token's aliases are not checked")
        refused = identity_refusals(self.token, self.config)
        for exc in refused:
            log(describe_error(self.config.path, exc))
        if refused:
            log("not started: no agent runs until the token may act as every agent of the config")
        return not refused

    def reread(self) -> None:
        """The config as it is now on disk, before the node starts (a SIGHUP came while it waited); its
        [node] keys stay as they were read first."""
        try:
            new = load_config(self.config.path)
        except ConfigError as exc:
            log(f"SIGHUP: {describe_error(self.config.path, exc)}; keeping the config read at start")
            return
        self.config = dataclasses.replace(
            new, hub=self.config.hub, name=self.config.name, state_dir=self.config.state_dir
        )
        log("SIGHUP: config read again before starting")

    async def recheck_identity(self) -> TokenIdentity | None:
        """Asked again at a reload (the token's binding or the network's policy may have changed since);
        what the hub said before, if it does not answer within RELOAD_ASK seconds."""
        try:
            with anyio.fail_after(RELOAD_ASK):
                self.token = await ask_identity(self.hub)
        except (HubUnavailable, HubRefused, TimeoutError) as exc:
            log(f"SIGHUP: the hub did not say who the token is ({exc or 'no answer'}); checking what it said before")
        return self.token

    def retry(self, attempt: Any) -> Any:
        return persist(attempt, log=log)

    def identity(self, agent: Agent, **fields: Any) -> dict[str, Any]:
        return {
            "alias": agent.alias,
            "resume_id": f"commhub-node:{self.config.name}:{agent.alias}",
            "agent": f"commhub-agent:{agent.config.runtime}",
            "hostname": socket.gethostname(),
            "node_id": self.config.name,
            "node_name": self.config.name,
            "version": f"commhub-agent {__version__}",
            **{k: v for k, v in fields.items() if v is not None},
        }

    # --- questions (permissions and stalls)

    async def ask(self, delivery: Delivery, question: str, choices: list[str]) -> str:
        """ask_operator on the task; waits for the answer that reaches the alias's inbox."""
        agent = self.agents[delivery.task["to_name"]]
        delivery.asking += 1
        try:
            asked = await self.retry(
                lambda: self.hub.call("ask_operator", task_id=delivery.task_id, question=question, options=choices)
            )
            if not asked.get("ok"):
                log(f"{agent.alias}: ask_operator refused ({asked.get('error')}): {asked.get('message')}")
                return choices[-1] if choices else ""
            answer = self.answers.setdefault(asked["question_id"], Answer())
            agent.report_status(delivery, status="waiting_input", output=question[:500])
            agent.ring()
            await answer.ready.wait()
            self.answers.pop(asked["question_id"], None)
            agent.report_status(delivery, status="working", output=f"answered: {answer.text[:200]}")
            return next((c for c in choices if c.lower() == answer.text.strip().lower()), answer.text.strip())
        finally:
            delivery.asking -= 1

    async def take_answer(self, alias: str, message: dict[str, Any]) -> bool:
        """An inbox reply answering one of our open questions: handed to the run that asked, acked."""
        context = message.get("context") or ""
        if message.get("type") != "reply" or not context.startswith(ANSWER_CONTEXT):
            return False
        question_id = context[len(ANSWER_CONTEXT) :].split(":", 1)[0]
        answer = self.answers.get(question_id)
        if answer is None:
            return False
        await self.retry(
            lambda: self.hub.call(
                "ack_inbox", alias=alias, message_id=message["id"], idempotency_key=f"{message['id']}/ack"
            )
        )
        answer.text = message.get("content") or ""
        answer.ready.set()
        return True

    # --- the hub's commands (node_command): carried out, then acknowledged with node_command_ack

    def command(self, payload: dict[str, Any]) -> None:
        """A node_command event from an agent's feed: carried out once (a node-wide one comes through
        every agent's feed), beside everything else."""
        command_id = payload.get("command_id")
        if not command_id or command_id in self.commands_seen or payload.get("node_id") != self.config.name:
            return
        self.commands_seen.add(command_id)
        self.group.start_soon(self.carry_out, payload)

    async def carry_out(self, payload: dict[str, Any]) -> None:
        kind, alias = payload["kind"], payload.get("alias")
        try:
            reason, lines = await self.obey(kind, alias, payload.get("task_id"), payload.get("value"))
        except Exception as exc:  # a command that breaks is answered failed, never breaks the node
            reason, lines = f"the node failed carrying it out: {exc!r}", None
        log(f"command {payload['command_id']}: {kind} {alias or 'node'}: {reason or 'done'}")
        fields: dict[str, Any] = {"command_id": payload["command_id"], "ok": reason is None}
        if reason is not None:
            fields["reason"] = reason
        if lines is not None:
            fields["lines"] = lines
        try:
            answer = await self.retry(lambda: self.hub.call("node_command_ack", **fields))
        except HubRefused as exc:
            log(f"command {payload['command_id']}: the hub refused its acknowledgement ({exc})")
            return
        if not answer.get("ok"):
            log(f"command {payload['command_id']}: acknowledgement refused: {answer.get('error')}")

    async def obey(
        self, kind: str, alias: str | None, task_id: str | None, value: int | None
    ) -> tuple[str | None, list[str] | None]:
        """Does what the command says; answers (why it failed or None, tail's lines)."""
        agent = self.agents.get(alias) if alias else None
        if alias and agent is None:
            return f"no agent {alias} runs on node {self.config.name}", None
        if kind in ("pause", "resume"):
            held = kind == "pause"
            if agent is not None:
                agent.paused = held
            else:  # the node: a node-wide resume resumes its agents paused one by one too
                self.paused = held
                for each in self.agents.values():
                    each.paused = each.paused and held
            for each in [agent] if agent else self.agents.values():
                if held:
                    each.fetching.cancel()  # a get_inbox under way takes nothing more
                each.ring()
                each.freed.set()
            self.changed.set()
            return None, None
        if kind == "stop":
            stopped = await self.stop_run(task_id, verdict="command", alias=alias)
            return (None if stopped else f"no run of task {task_id} on {alias or self.config.name}"), None
        if kind == "restart_session":
            assert agent is not None
            self.sessions.forget(agent.alias)
            return None, None
        if kind == "drain":
            log("command: drain: taking no new task; running ones finish, then the node stops")
            self.stopping, self.stop_reason = True, "node drained by a command"
            for each in self.agents.values():
                each.retire()
            self.changed.set()
            return None, None
        if kind == "set_concurrency":
            assert agent is not None and value is not None
            agent.config = dataclasses.replace(agent.config, concurrency=value)
            agent.ring()
            agent.freed.set()
            self.changed.set()
            return None, None
        if kind == "tail":
            lines = self.tails.last(task_id or "", value or 50)
            if lines is None:
                return f"no run of task {task_id} on node {self.config.name}", None
            return None, lines
        return f"this node does not know the command {kind!r} (commhub-agent {__version__})", None

    async def stop_run(self, task_id: str | None, *, verdict: str, alias: str | None = None) -> bool:
        """Stops the run of `task_id` here now (its process group), failing its task with `verdict`'s
        words; False if no run of it is here."""
        for agent in list(self.agents.values()):
            if alias and agent.alias != alias:
                continue
            for delivery in list(agent.running.values()):
                if delivery.task.get("task_id") == task_id and delivery.run is not None:
                    if delivery.verdict is None:
                        delivery.verdict = verdict
                    await delivery.run.stop()
                    return True
        return False

    # --- the node as a whole

    def slots_changed(self) -> None:
        self.changed.set()

    def agent_ended(self, agent: Agent) -> None:
        if self.agents.get(agent.alias) is agent:
            del self.agents[agent.alias]
        self.changed.set()

    def start_agent(self, group: Any, config: AgentConfig) -> None:
        agent = Agent(self, config)
        self.agents[config.alias] = agent
        group.start_soon(agent.serve)

    async def serve(self) -> None:
        names = ", ".join(f"{a.alias} ({a.runtime}, {a.concurrency} at once)" for a in self.config.agents.values())
        token = f", token {self.token.label} bound to {self.token.shown}" if self.token else ""
        log(
            f"started: hub {self.config.hub}, node {self.config.name}{token}, state {self.config.state_dir}; "
            f"agents {names}"
        )
        self.recover()
        async with anyio.create_task_group() as group:
            self.group = group
            group.start_soon(self.outbox.send_forever, self.hub)
            group.start_soon(self.on_signals, group)
            group.start_soon(self.report_node_forever)
            group.start_soon(self.heartbeats)
            async with anyio.create_task_group() as agents:
                self.agent_group = agents
                for config in self.config.agents.values():
                    self.start_agent(agents, config)
            # Every agent has drained: the last reports get a moment to leave before we exit.
            with anyio.move_on_after(10):
                await self.outbox.drained()
            if self.outbox.pending:
                log(f"{len(self.outbox.pending)} reports not sent yet: the next start sends them")
            await self.report_node(offline=True)
            group.cancel_scope.cancel()
        await self.hub.aclose()

    def recover(self) -> None:
        """Deliveries the previous run of this node started and never finished: it died mid-run."""
        for entry in self.outbox.unfinished():
            alias, task_id, mid = entry["alias"], entry["task_id"], entry["delivery"]
            orphans = kill_orphans("COMMHUB_MESSAGE_ID", mid)
            left = f" (its run, still going, was stopped: group {', '.join(map(str, orphans))})" if orphans else ""
            log(f"{alias}: task {task_id} was running when the node stopped; failing it as crashed{left}")
            text = (
                f"failed: the node {self.config.name} crashed (or was killed) while {alias} ran task {task_id}; "
                "it was not re-run. retry_task sends it again."
            )
            self.outbox.put(
                (
                    f"{mid}/reply",
                    "send_reply",
                    {
                        "alias": entry.get("sender") or "hub",
                        "text": text,
                        "in_reply_to": task_id,
                        "status": "failed",
                        "from_session": alias,
                    },
                ),
                (f"{mid}/completion", "report_completion", {"alias": alias, "task": task_id, "result": text}),
                delivery=mid,
                final=True,
            )

    async def on_signals(self, group: Any) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for signum in signals:
                if signum == signal.SIGHUP:
                    await self.reload()
                    continue
                name = signal.Signals(signum).name
                running = sum(len(a.running) for a in self.agents.values())
                log(f"{name}: taking no new task; {running} running get {self.config.stop_grace:g} s")
                self.stopping, self.stop_reason = True, f"node stopped ({name})"
                for agent in self.agents.values():
                    agent.retire()
                group.start_soon(self.stop_after_grace)

    async def stop_after_grace(self) -> None:
        await anyio.sleep(self.config.stop_grace)
        for agent in list(self.agents.values()):
            for delivery in list(agent.running.values()):
                if delivery.run is not None and delivery.verdict is None:
                    delivery.verdict = "stopped"
                    await delivery.run.stop()

    async def reload(self) -> None:
        try:
            new = load_config(self.config.path)
        except ConfigError as exc:
            log(f"SIGHUP: {describe_error(self.config.path, exc)}; keeping the running config")
            return
        fixed = restart_needed(self.config, new)
        if fixed:
            new = dataclasses.replace(new, hub=self.config.hub, name=self.config.name, state_dir=self.config.state_dir)
        refused = identity_refusals(await self.recheck_identity(), new)
        if refused:
            for exc in refused:
                log(f"SIGHUP: {describe_error(self.config.path, exc)}")
            log("SIGHUP: keeping the running config")
            return
        if fixed:
            log(f"SIGHUP: {', '.join(fixed)} changed: kept as they were until the node restarts")
        added, removed, changed = diff_configs(self.config, new)
        for alias in removed:
            if alias in self.agents:
                self.agents[alias].retire()
        for alias in changed:
            if alias in self.agents:
                self.agents[alias].reconfigure(new.agents[alias])
        self.config = new
        for alias in added:
            self.start_agent(self.agent_group, new.agents[alias])
        log(
            f"SIGHUP: config reloaded; added {', '.join(added) or 'none'}, removed {', '.join(removed) or 'none'}, "
            f"changed {', '.join(changed) or 'none'}"
        )
        self.changed.set()

    async def heartbeats(self) -> None:
        for agent in list(self.agents.values()):
            await self.heartbeat(agent)
        while True:
            await anyio.sleep(HEARTBEAT_EVERY)
            for agent in list(self.agents.values()):
                if not agent.running:
                    await self.heartbeat(agent)

    async def heartbeat(self, agent: Agent) -> None:
        try:
            await self.hub.call(
                "report_status",
                **self.identity(
                    agent,
                    status="idle",
                    skills=list(agent.config.skills) or None,
                    max_concurrent=agent.config.concurrency,
                ),
            )
        except (HubUnavailable, HubRefused) as exc:
            log(f"{agent.alias}: heartbeat failed: {exc}")  # advisory; the next one may pass

    async def report_node_forever(self) -> None:
        self.versions = await anyio.to_thread.run_sync(self.runtime_versions)
        while True:
            await self.report_node()
            self.changed = anyio.Event()
            with anyio.move_on_after(NODE_REPORT_EVERY):
                await self.changed.wait()
                await anyio.sleep(1)  # a burst of slot changes becomes one report
            for agent in list(self.agents.values()):
                await anyio.to_thread.run_sync(
                    lambda a=agent: prune_workspaces(
                        a.config,
                        root=self.config.state_dir,
                        now=time.time(),
                        active=[d.workspace for d in a.running.values() if d.workspace],
                    )
                )

    def runtime_versions(self) -> dict[str, str | None]:
        """The version of each agent tool the agents use, asked as each runtime runs it (an agent's
        options may name its own binary); a command has no tool of its own to ask."""
        versions = {}
        for agent in self.config.agents.values():
            if agent.runtime == "command" or agent.runtime in versions:
                continue
            try:
                versions[agent.runtime] = RUNTIMES[agent.runtime]().version(agent.options)
            except Exception as exc:  # a version is shown, never needed: a broken probe is logged
                log(f"{agent.runtime}: no version ({exc})")
                versions[agent.runtime] = None
        return versions

    async def report_node(self, *, offline: bool = False) -> None:
        agents = [
            {
                "alias": a.alias,
                "runtime": a.config.runtime,
                "concurrency": a.config.concurrency,
                "running": len(a.running),
                "paused": a.held or self.stopping,
            }
            for a in self.agents.values()
        ]
        total = 0 if offline else sum(a["concurrency"] for a in agents)
        try:
            answer = await self.hub.call(
                "report_node",
                node_id=self.config.name,
                node_name=self.config.name,
                host=socket.gethostname(),
                os=f"{platform.system()} {platform.release()} ({platform.machine()})",
                agent_version=__version__,
                runtimes=[{"name": n, "version": v or "not found"} for n, v in self.versions.items()],
                agents=agents,
                slots_total=total,
                slots_used=0 if offline else sum(a["running"] for a in agents),
            )
            if not answer.get("ok"):
                log(f"report_node refused: {answer.get('error')}: {answer.get('message')}")
        except (HubUnavailable, HubRefused) as exc:
            log(f"report_node failed: {exc}")


def run_node(config_path: Path) -> int:
    try:
        config = load_config(config_path)
    except ConfigError as exc:
        print(f"commhub-agent node: {describe_error(config_path, exc)}", file=sys.stderr)
        return 2
    token = os.environ.get("COMMHUB_TOKEN", "")
    if not token:
        print(
            "commhub-agent node: set COMMHUB_TOKEN to the node's token of the hub (ntok_…), bound to its agents:"
            f" python manage.py create_token --network NETWORK --alias {shlex.quote(','.join(config.agents))}",
            file=sys.stderr,
        )
        return 2

    async def main() -> int:  # built inside the event loop: its events belong to it
        node = Node(config, token)
        if not await node.admitted():
            await node.hub.aclose()
            return 2  # as a wrong key: the operator fixes the token or the config and starts it again
        await node.serve()
        return 0

    return anyio.run(main)
