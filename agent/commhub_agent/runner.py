"""`commhub-agent run --alias A -- <command …>`: a headless runner for Codex, `claude -p` or any program.

A delivery (an inbox row of type task) goes through these steps, each recorded in a local journal
before the next one starts:

    get_task (still ours and waiting?) → ack_inbox → journal "started" → report_status working →
    run the command → journal "done" (with what to report) → report → journal "reported"

So a delivery runs at most once: an acked row is never handed out by the hub again, a restarted
runner reports a "done" delivery from its journal instead of running it again, and a delivery it
finds "started" (the runner died mid-run) is closed as failed with that reason, not silently left.
A retried task is a new delivery (a new inbox row) and runs again, as retry_task intends.

Outcomes: exit status 0 → report_completion (the task is replied, the output its result);
anything else → send_reply status "failed" to the sender (exit status and the tail of stderr),
then report_completion records it. On SIGTERM the runner takes no new task, lets running ones
finish for --stop-grace seconds, then stops them and closes them as failed "runner stopped".
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

from commhub_agent import __version__
from commhub_agent.hub import (
    RESULT_MAX,
    TEXT_MAX,
    Backoff,
    Config,
    Hub,
    HubRefused,
    HubUnavailable,
    persist,
    truncate,
)
from commhub_agent.process import lines, stop_group
from commhub_agent.state import Journal, default_state_dir, safe_name

# A line the command prints to report progress: "progress: 40" or "progress: 40% writing tests".
PROGRESS = re.compile(r"^\s*progress:\s*(\d{1,3}(?:\.\d+)?)\s*%?\s*(.*)$", re.IGNORECASE)
STDERR_TAIL = 2_000
WAITING = ("delivered", "acked")  # a task in these states is still to be run


def log(message: str) -> None:
    print(f"commhub-agent run: {message}", file=sys.stderr, flush=True)


@dataclass
class Options:
    command: list[str]
    concurrency: int = 1
    timeout: float | None = None
    workdir: str | None = None  # may contain {task_id} and {alias}
    stop_grace: float = 10.0
    poll: float = 30.0
    heartbeat: float = 120.0


@dataclass
class Outcome:
    status: str  # "replied" or "failed"
    result: str
    reply: str = ""  # for a failure, what the sender reads
    minutes: float = 0.0


@dataclass
class Runner:
    config: Config
    options: Options
    journal: Journal
    hub: Hub = field(init=False)
    running: dict[str, str] = field(default_factory=dict)  # message id → task id
    stopping: bool = False

    def __post_init__(self) -> None:
        self.hub = Hub(self.config)
        # The doorbell: the inbox may hold work not fetched yet (a feed event, a freed slot, a fetch
        # that found more than it could take). It stays rung until the next fetch starts.
        self.doorbell = anyio.Event()
        self.doorbell.set()  # at start: whatever queued while no runner was there
        self.freed = anyio.Event()  # a delivery ended: a busy runner looks at its slots again
        self.sse_up = False
        self.passed: set[str] = set()  # deliveries looked at and left alone (not ours to run)
        self.fetching = anyio.CancelScope()
        self.work: Any = None
        self.stop_reason = "runner stopped"

    def ring(self) -> None:
        self.doorbell.set()

    def retry(self, attempt: Any) -> Any:
        return persist(attempt, log=log)

    def identity(self, **fields: Any) -> dict[str, Any]:
        return {
            "alias": self.config.alias,
            "resume_id": self.config.resume_id,
            "agent": f"commhub-agent:{Path(self.options.command[0]).name}",
            "hostname": socket.gethostname(),
            "project_dir": os.getcwd(),
            "version": f"commhub-agent {__version__}",
            **fields,
        }

    async def report_status(self, **fields: Any) -> None:
        try:
            await self.hub.call("report_status", **self.identity(**fields))
        except (HubUnavailable, HubRefused) as exc:
            log(f"report_status failed: {exc}")  # status is advisory; the task's own steps are retried

    # --- finding work

    async def watch_feed(self) -> None:
        """The SSE feed as a doorbell: any task event makes the loop look at the inbox now."""
        backoff = Backoff()
        while True:
            try:
                async for _id, kind, _frame in self.hub.events(self.config.alias, None):
                    self.sse_up = True
                    backoff.reset()
                    if kind in ("new_task", "task_updated"):
                        self.ring()
            except (HubUnavailable, HubRefused) as exc:
                log(f"feed interrupted ({exc}); long-polling until it is back")
            self.sse_up = False
            self.ring()
            await backoff.sleep()

    async def next_messages(self, slots: int) -> list[dict[str, Any]]:
        """Task deliveries waiting in the inbox that this runner has not taken yet: at once when the
        doorbell rang, else after news or --poll seconds (a long-poll while the feed is down)."""
        wait = 0
        if not self.doorbell.is_set():
            if self.sse_up:
                with anyio.move_on_after(self.options.poll):
                    await self.doorbell.wait()
            else:
                wait = min(30, int(self.options.poll))  # long-poll: the fallback when the feed is down
        # Reset before asking: a ring while get_inbox is under way is news for the next round.
        self.doorbell = anyio.Event()
        inbox = await self.retry(
            lambda: self.hub.call("get_inbox", alias=self.config.alias, limit=100, wait_seconds=wait or None)
        )
        if not inbox.get("ok"):
            raise HubRefused(inbox)
        fresh = [
            m
            for m in inbox["messages"]
            if m.get("type") == "task"
            and m["id"] not in self.running
            and m["id"] not in self.passed
            and self.journal.state(m["id"]) is None
        ]
        if len(fresh) > slots:
            self.ring()  # more is waiting than there are slots: the next freed slot fetches at once
        return fresh[:slots]

    async def serve(self) -> None:
        log(
            f"started: hub {self.config.hub}, alias {self.config.alias}, "
            f"concurrency {self.options.concurrency}, command {shlex.join(self.options.command)}"
        )
        await self.report_status(status="idle")
        await self.recover()
        async with anyio.create_task_group() as group:
            group.start_soon(self.watch_feed)
            group.start_soon(self.heartbeats)
            group.start_soon(self.stop_on_signal, group)
            self.tasks = group
            async with anyio.create_task_group() as work:
                self.work = work
                while not self.stopping:
                    slots = self.options.concurrency - len(self.running)
                    if slots <= 0:
                        # Waits for a slot, not for the doorbell: a ring meanwhile stays rung for the fetch.
                        with anyio.move_on_after(self.options.poll):
                            await self.freed.wait()
                        self.freed = anyio.Event()
                        continue
                    with anyio.CancelScope() as self.fetching:
                        try:
                            messages = await self.next_messages(slots)
                        except HubRefused as exc:  # a revoked token, most likely: retrying will not help
                            log(f"the hub refused get_inbox ({exc}); stopping")
                            self.stopping = True
                            break
                        for message in messages:
                            self.running[message["id"]] = message.get("task_id") or message["id"]
                            work.start_soon(self.deliver, message)
                # Stopping: the work group waits for the running deliveries (stop() bounds them).
            group.cancel_scope.cancel()
        await self.report_status(status="offline")
        await self.hub.aclose()

    async def heartbeats(self) -> None:
        while True:
            await anyio.sleep(self.options.heartbeat)
            if not self.running:
                await self.report_status(status="idle")

    async def stop_on_signal(self, group: Any) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                log(f"{signal.Signals(signum).name}: taking no new task; {len(self.running)} running")
                self.stopping = True
                self.stop_reason = f"runner stopped ({signal.Signals(signum).name})"
                self.fetching.cancel()
                self.ring()
                self.freed.set()
                await anyio.sleep(self.options.stop_grace)
                if self.work is not None:
                    self.work.cancel_scope.cancel()  # the running deliveries hand their tasks back
                return

    # --- one delivery

    async def deliver(self, message: dict[str, Any]) -> None:
        message_id = message["id"]
        task_id = message.get("task_id") or message_id
        try:
            task = await self.retry(lambda: self.hub.call("get_task", task_id=task_id))
            info = task.get("task") or {}
            if not task.get("ok") or info.get("status") not in WAITING or info.get("to_name") != self.config.alias:
                self.passed.add(message_id)
                return  # cancelled, reassigned or finished meanwhile: nothing to run
            # Shielded: an ack the hub made must reach the journal, or the task would be silently taken.
            with anyio.CancelScope(shield=True):
                taken = await self.take(message_id)
                if not taken:
                    self.passed.add(message_id)
                    return  # another runner of this alias took it first
                self.journal.record(message_id, task_id=task_id, state="started", sender=message.get("from_session"))
            started = time.monotonic()
            try:
                await self.report_status(status="working", task=task_id, progress=0)
                outcome = await self.execute(message, info)
            except anyio.get_cancelled_exc_class():
                reason = self.stop_reason
                stopped = Outcome(
                    "failed",
                    f"failed: {reason} before the task finished; it was not re-run",
                    f"{reason} before task {task_id} finished. It was not run to the end and will not be "
                    "run again by itself: retry_task sends it again.",
                )
                with anyio.CancelScope(shield=True):
                    await self.finish(message_id, stopped)
                raise
            outcome.minutes = (time.monotonic() - started) / 60
            with anyio.CancelScope(shield=True):  # a stop must not cut a report in half
                await self.finish(message_id, outcome)
        finally:
            self.running.pop(message_id, None)
            self.ring()  # a freed slot looks at the inbox at once: the next queued task starts now
            self.freed.set()

    async def take(self, message_id: str) -> bool:
        """ack_inbox, retried; an ack whose answer was lost counts as ours when the retry finds it
        already acked (one runner per alias: README says so)."""
        lost = False
        backoff = Backoff()
        while True:
            try:
                answer = await self.hub.call("ack_inbox", alias=self.config.alias, message_id=message_id)
            except HubUnavailable as exc:
                lost = True
                log(f"ack_inbox {message_id}: {exc}; retrying")
                await backoff.sleep()
                continue
            return bool(answer.get("ok")) or (lost and answer.get("error") == "message not found or not yours")

    async def finish(self, message_id: str, outcome: Outcome) -> None:
        self.journal.record(
            message_id,
            state="done",
            status=outcome.status,
            result=outcome.result,
            reply=outcome.reply,
            minutes=round(outcome.minutes, 3),
        )
        if os.environ.get("COMMHUB_AGENT_TEST_CRASH") == "after-done":
            os.kill(os.getpid(), signal.SIGKILL)  # fault injection for the crash test: die before reporting
        await self.report(self.journal.entries[message_id], first=True)

    async def report(self, entry: dict[str, Any], *, first: bool = False) -> None:
        """Tell the hub how a delivery ended; safe to repeat after a crash or a lost answer."""
        task_id, alias = entry["task_id"], self.config.alias
        status, ours = None, False
        # A success this process just ran has no earlier report to look for: it is reported at once.
        # A failure, or any delivery a restart reports, looks at the task first.
        if not (first and entry["status"] == "replied"):
            current = await self.retry(lambda: self.hub.call("get_task", task_id=task_id))
            info = (current.get("task") or {}) if current.get("ok") else {}
            status, ours = info.get("status"), info.get("to_name") == alias
        # Only a task still ours and taken is failed: one cancelled or reassigned meanwhile is left be.
        if entry["status"] == "failed" and ours and status in ("acked", "running"):
            await self.retry(
                lambda: self.hub.call(
                    "send_reply",
                    alias=entry.get("sender") or "hub",
                    text=truncate(entry["reply"] or entry["result"], TEXT_MAX, keep="tail"),
                    in_reply_to=task_id,
                    status="failed",
                    from_session=alias,
                )
            )
        # A replied task was reported already (the answer to an earlier attempt was lost): not twice.
        if entry["status"] == "failed" or status != "replied":
            await self.retry(
                lambda: self.hub.call(
                    "report_completion",
                    alias=alias,
                    task=task_id,
                    result=entry["result"] or "(no output)",
                    duration_minutes=entry.get("minutes"),
                )
            )
        self.journal.record(entry["message_id"], state="reported")

    async def recover(self) -> None:
        """Deliveries a previous run of this runner left unreported."""
        for entry in self.journal.unfinished():
            if entry["state"] == "started":
                # Died mid-run: the work may be half done, so it is closed as failed, never re-run.
                entry.update(
                    status="failed",
                    result="failed: the runner stopped (crashed) while running this task; it was not re-run",
                    reply=f"The runner for {self.config.alias} crashed (or was killed) while running task "
                    f"{entry['task_id']}; it was not re-run. retry_task sends it again.",
                )
            log(f"reporting delivery {entry['message_id']} (task {entry['task_id']}) left by a previous run")
            await self.report(entry)

    async def execute(self, message: dict[str, Any], task: dict[str, Any]) -> Outcome:
        task_id = task["task_id"]
        env = {
            **os.environ,
            "COMMHUB_ALIAS": self.config.alias,
            "COMMHUB_TASK_ID": task_id,
            "COMMHUB_MESSAGE_ID": message["id"],
            "COMMHUB_TASK_FROM": message.get("from_session") or task.get("from_name") or "",
            "COMMHUB_TASK_PRIORITY": message.get("priority") or task.get("priority") or "normal",
            "COMMHUB_TASK_CONTEXT": message.get("context") or task.get("context") or "",
            "COMMHUB_TASK": message.get("content") or task.get("content") or "",
        }
        env.pop("COMMHUB_TOKEN", None)  # the agent's program needs no hub credentials of the runner
        cwd = None
        if self.options.workdir:
            cwd = Path(self.options.workdir.format(task_id=task_id, alias=safe_name(self.config.alias)))
            cwd.mkdir(parents=True, exist_ok=True)
        output: list[str] = []
        errors: list[str] = []
        process = await anyio.open_process(self.options.command, cwd=cwd, env=env, start_new_session=True)
        try:
            with anyio.fail_after(self.options.timeout):
                async with anyio.create_task_group() as io:
                    io.start_soon(self._feed, process, env["COMMHUB_TASK"])
                    io.start_soon(self._read_stdout, process, task_id, output)
                    io.start_soon(self._read_stderr, process, errors)
                    await process.wait()
        except TimeoutError:
            await stop_group(process)
            tail = truncate("".join(errors), STDERR_TAIL, keep="tail")
            return Outcome(
                "failed",
                f"failed: timed out after {self.options.timeout:g} s\n{tail}",
                f"Task {task_id} timed out after {self.options.timeout:g} s on {self.config.alias}.\n{tail}",
            )
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stop_group(process)
            raise
        text = "".join(output)
        if process.returncode == 0:
            return Outcome("replied", truncate(text, RESULT_MAX, keep="tail") or "(no output)")
        tail = truncate("".join(errors), STDERR_TAIL, keep="tail")
        return Outcome(
            "failed",
            truncate(
                f"failed: exit status {process.returncode}\n--- stderr (tail) ---\n{tail}\n--- output ---\n{text}",
                RESULT_MAX,
            ),
            f"Task {task_id} failed on {self.config.alias}: exit status {process.returncode}.\nstderr (tail):\n{tail}",
        )

    async def _feed(self, process: Process, text: str) -> None:
        assert process.stdin is not None
        try:
            await process.stdin.send(text.encode())
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass  # the program does not read its stdin
        finally:
            await process.stdin.aclose()

    async def _read_stdout(self, process: Process, task_id: str, output: list[str]) -> None:
        assert process.stdout is not None
        last_report = 0.0
        async for line in lines(process.stdout):
            match = PROGRESS.match(line)
            if match is None:
                output.append(line)
                continue
            # A progress line is reported as progress, not kept in the result.
            progress = min(100.0, float(match.group(1)))
            now = time.monotonic()
            if now - last_report >= 0.5 or progress >= 100:  # the hub limits writes; the latest wins
                last_report = now
                await self.report_status(status="working", task=task_id, progress=progress)

    async def _read_stderr(self, process: Process, errors: list[str]) -> None:
        assert process.stderr is not None
        async for line in lines(process.stderr):
            errors.append(line)
            if len(errors) > 400:
                del errors[:200]


def run_runner(config: Config, options: Options, *, state_dir: Path | None) -> None:
    journal = Journal((state_dir or default_state_dir()) / f"{safe_name(config.alias)}.runner.jsonl")

    async def main() -> None:  # built inside the event loop: its events and cancel scopes belong to it
        await Runner(config, options, journal).serve()

    anyio.run(main)
