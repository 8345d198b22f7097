"""The node's outbox: journalled before sent, sent in order with replay keys, nothing lost."""

from __future__ import annotations

import json

import anyio
import pytest
from commhub_agent.hub import HubUnavailable
from commhub_agent.node.outbox import Outbox


class Hub:
    """Records the calls; `down` calls fail as an unreachable hub would; `refuse` tools answer ok: false."""

    def __init__(self, down: int = 0, refuse: tuple[str, ...] = ()) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.down, self.refuse = down, refuse

    async def call(self, tool: str, **arguments):
        if self.down:
            self.down -= 1
            raise HubUnavailable("connection refused")
        self.calls.append((tool, arguments))
        return {"ok": tool not in self.refuse, "error": "task_terminal" if tool in self.refuse else None}


def sent_through(outbox: Outbox, hub: Hub) -> None:
    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(outbox.send_forever, hub)
            with anyio.fail_after(30):
                await outbox.drained()
            group.cancel_scope.cancel()

    anyio.run(main)


@pytest.fixture
def no_backoff(monkeypatch):
    async def instant(self) -> None:
        await anyio.sleep(0)

    monkeypatch.setattr("commhub_agent.hub.Backoff.sleep", instant)


def test_reports_are_sent_in_order_with_their_keys_across_an_outage(tmp_path, no_backoff):
    logs: list[str] = []
    outbox = Outbox(tmp_path / "outbox.jsonl", log=logs.append)
    outbox.begin("m1", alias="a", task_id="t1", sender="lead")
    outbox.put(("m1/status-1", "report_status", {"alias": "a", "status": "working"}), delivery="m1")
    outbox.put(
        ("m1/reply", "send_reply", {"text": "broke"}),
        ("m1/completion", "report_completion", {"task": "t1"}),
        delivery="m1",
        final=True,
    )
    hub = Hub(down=3)
    sent_through(outbox, hub)
    assert [(tool, args["idempotency_key"]) for tool, args in hub.calls] == [
        ("report_status", "m1/status-1"),
        ("send_reply", "m1/reply"),
        ("report_completion", "m1/completion"),
    ]
    assert sum("not sent" in line for line in logs) == 3  # the outage was waited out, not skipped
    assert outbox.unfinished() == []


def test_a_restart_sends_what_was_journalled_and_fails_nothing_twice(tmp_path, no_backoff):
    path = tmp_path / "outbox.jsonl"
    first = Outbox(path, log=print)
    first.begin("m1", alias="a", task_id="t1", sender=None)
    first.begin("m2", alias="a", task_id="t2", sender=None)
    first.put(("m1/completion", "report_completion", {"task": "t1"}), delivery="m1", final=True)
    with open(path, "a") as handle:
        handle.write('{"op": "report", "seq": 9')  # a line torn by a crash mid-write
    # The process died here: m1 finished (its report journalled, not sent); m2 was still running.
    again = Outbox(path, log=print)
    assert [d["delivery"] for d in again.unfinished()] == ["m2"]
    again.put(("m1/completion", "report_completion", {"task": "t1"}), delivery="m1", final=True)  # put twice
    hub = Hub()
    sent_through(again, hub)
    assert hub.calls == [("report_completion", {"task": "t1", "idempotency_key": "m1/completion"})]
    third = Outbox(path, log=print)  # sent is remembered
    assert third.pending == [] and [d["delivery"] for d in third.unfinished()] == ["m2"]


def test_a_refused_report_is_logged_and_the_rest_still_go(tmp_path):
    logs: list[str] = []
    outbox = Outbox(tmp_path / "outbox.jsonl", log=logs.append)
    outbox.put(("m1/reply", "send_reply", {}), ("m1/completion", "report_completion", {}), delivery="m1", final=True)
    hub = Hub(refuse=("send_reply",))
    sent_through(outbox, hub)
    assert [tool for tool, _ in hub.calls] == ["send_reply", "report_completion"]
    assert any("refused send_reply" in line and "task_terminal" in line for line in logs)
    records = [json.loads(line) for line in (tmp_path / "outbox.jsonl").read_text().splitlines()]
    assert sorted(r["seq"] for r in records if r["op"] == "sent") == [1, 2]
