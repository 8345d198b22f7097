"""The node's outbox: every report it makes is journalled on disk before it is sent, and sent in order.

One JSON line per record, in `outbox.jsonl`:

    {"op": "start", "delivery": M, "alias": A, "task_id": T, "sender": S}   a delivery taken (acked)
    {"op": "report", "seq": N, "key": K, "tool": ..., "args": {...}, "delivery": M, "final": bool}
    {"op": "sent", "seq": N}

A report is written (fsynced) before the node goes on, so a crash or a hub outage loses none; one
sender sends them strictly in `seq` order, each with its key as `idempotency_key`, so a report sent
again after a lost answer (or a crash between sending and writing "sent") is recorded once by the
hub. A delivery whose final report is in the journal has finished: a restart reports it, never
runs it again; a delivery started with no final report was cut off mid-run (the node died).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from commhub_agent.hub import Backoff, Hub, HubRefused, HubUnavailable

COMPACT_AFTER = 4 * 1024 * 1024  # bytes of journal before it is rewritten with what is still open


@dataclass
class Report:
    seq: int
    key: str
    tool: str
    args: dict[str, Any]
    delivery: str | None = None
    final: bool = False

    def record(self) -> dict[str, Any]:
        return {"op": "report", **self.__dict__}


class Outbox:
    def __init__(self, path: Path, *, log: Callable[[str], None]) -> None:
        self.path, self.log = path, log
        path.parent.mkdir(parents=True, exist_ok=True)
        self.started: dict[str, dict[str, Any]] = {}  # delivery -> its start record, until it finished
        self.pending: list[Report] = []
        self.keys: set[str] = set()  # every key journalled since the last compaction
        self.seq = 0
        self._load()
        self._compact()
        self.wake = anyio.Event()
        self.idle = anyio.Event()
        if not self.pending:
            self.idle.set()

    # --- the journal

    def _load(self) -> None:
        if not self.path.exists():
            return
        sent: set[int] = set()
        reports: list[Report] = []
        finished: set[str] = set()
        for line in self.path.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line torn by a crash mid-write: that step is simply not recorded
            op = record.pop("op", None)
            if op == "start":
                self.started[record["delivery"]] = record
            elif op == "report":
                report = Report(**record)
                reports.append(report)
                self.keys.add(report.key)
                if report.final and report.delivery:
                    finished.add(report.delivery)
            elif op == "sent":
                sent.add(record["seq"])
        for delivery in finished:
            self.started.pop(delivery, None)
        self.pending = [r for r in reports if r.seq not in sent]
        self.seq = max((r.seq for r in reports), default=0)

    def _write(self, records: list[dict[str, Any]], *, sync: bool = True) -> None:
        with open(self.path, "a") as handle:
            handle.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
            handle.flush()
            if sync:
                os.fsync(handle.fileno())

    def _compact(self) -> None:
        """Rewrite the journal with only what is still open (deliveries running, reports unsent)."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w") as handle:
            for record in self.started.values():
                handle.write(json.dumps({"op": "start", **record}) + "\n")
            for report in self.pending:
                handle.write(json.dumps(report.record()) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)

    def begin(self, delivery: str, **fields: Any) -> None:
        record = {"delivery": delivery, **fields}
        self._write([{"op": "start", **record}])
        self.started[delivery] = record

    def put(self, *reports: tuple[str, str, dict[str, Any]], delivery: str | None = None, final: bool = False) -> None:
        """Journal reports (key, tool, arguments) in one write, then let the sender send them; with
        `final`, the last one closes the delivery. A key already journalled is not put twice."""
        fresh = [(key, tool, args) for key, tool, args in reports if key not in self.keys]
        batch = []
        for index, (key, tool, args) in enumerate(fresh):
            self.seq += 1
            last = index == len(fresh) - 1
            batch.append(Report(self.seq, key, tool, args, delivery, final and last))
        if batch:
            self._write([r.record() for r in batch])
            self.pending.extend(batch)
            self.keys.update(r.key for r in batch)
            if self.idle.is_set():
                self.idle = anyio.Event()
            self.wake.set()
        if final and delivery is not None:
            self.started.pop(delivery, None)

    def unfinished(self) -> list[dict[str, Any]]:
        """Deliveries a previous run of the node started and never finished."""
        return [dict(r) for r in self.started.values()]

    # --- the sender

    async def send_forever(self, hub: Hub) -> None:
        backoff = Backoff()
        while True:
            if not self.pending:
                self.idle.set()
                self.wake = anyio.Event()
                await self.wake.wait()
                continue
            report = self.pending[0]
            try:
                answer = await hub.call(report.tool, **report.args, idempotency_key=report.key)
            except (HubUnavailable, HubRefused) as exc:
                # Unavailable: the hub is down or restarting. Refused: a token revoked or a protocol
                # fault; both are kept and retried, in order, rather than dropped.
                self.log(f"outbox: {report.tool} ({report.key}) not sent: {exc}; retrying in {backoff.delay:.1f}s")
                await backoff.sleep()
                continue
            backoff.reset()
            if not answer.get("ok"):
                # The hub looked at it and said no (the task was cancelled meanwhile, ...): retrying
                # would be refused the same way.
                self.log(
                    f"outbox: the hub refused {report.tool} ({report.key}): {answer.get('error')}: "
                    f"{answer.get('message')}"
                )
            self.pending.pop(0)
            self._write([{"op": "sent", "seq": report.seq}], sync=False)  # lost: resent with its key, harmless
            if not self.pending and self.path.stat().st_size > COMPACT_AFTER:
                self._compact()
                # A key is looked up only to put a crash's reports once (Node.recover): those of a
                # delivery still running are never put before it ends, so the sent ones can go.
                self.keys = set()

    async def drained(self) -> None:
        await self.idle.wait()
