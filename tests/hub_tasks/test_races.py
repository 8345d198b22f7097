"""Concurrent callers on real connections: exactly one winner per transition, a consistent history.

On PostgreSQL these race row locks for real; on SQLite the same tests check that serialised
writers (BEGIN IMMEDIATE) reach the same outcomes.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from hub_agents.actors import Actor
from hub_agents.models import AgentSession, AuditEntry
from hub_core.errors import HubError
from hub_events.models import OPERATORS, Event
from hub_tasks.models import TERMINAL, Completion, InboxMessage, Task, TaskEvent
from tests.helpers.calls import (
    ack_inbox,
    cancel_task,
    reassign_task,
    report_completion,
    report_status,
    retry_task,
    send_ack,
    send_task,
)
from tests.helpers.races import race

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.race]
ROUNDS = range(4)  # a lost race shows up in some rounds only: run each race several times
SENDERS = 50  # PostgreSQL allows 100 connections: keep every race well under it
CONTENT = "write quicksort"


def assert_history_consistent(task_id: str) -> None:
    task = Task.objects.get(pk=task_id)
    steps = list(TaskEvent.objects.filter(task_id=task_id).order_by("id").values_list("from_status", "to_status"))
    for (_, reached), (left, _) in itertools.pairwise(steps):
        assert left == reached, f"history jumps: {steps}"
    assert steps[-1][1] == task.status


@pytest.mark.parametrize("racers", [2, 8])
def test_concurrent_acks_of_one_message_have_one_winner(agent, racers):
    sent = send_task(actor=agent, alias="coder", task="build")
    outcomes = race(*[lambda: ack_inbox(actor=agent, alias="coder", message_id=sent["message_id"])] * racers)

    assert outcomes.count({"ok": True}) == 1
    losers = [o for o in outcomes if isinstance(o, HubError)]
    assert len(losers) == racers - 1
    assert {loser.error for loser in losers} == {"message not found or not yours"}
    assert TaskEvent.objects.filter(task_id=sent["task_id"], to_status="acked").count() == 1
    assert_history_consistent(sent["task_id"])


def test_concurrent_reassign_and_cancel_leave_one_consistent_state(agent):
    for _ in range(5):
        task_id = send_task(actor=agent, alias="coder", task="build")["task_id"]
        reassigned, cancelled = race(
            lambda task_id=task_id: reassign_task(actor=agent, task_id=task_id, new_alias="reviewer"),
            lambda task_id=task_id: cancel_task(actor=agent, task_id=task_id, reason="changed plans"),
        )

        task = Task.objects.get(pk=task_id)
        assert cancelled["cancelled"] is True  # cancel is allowed before and after a reassign
        assert task.status == "cancelled"
        if isinstance(reassigned, HubError):  # cancel won: the reassign saw a terminal task
            assert reassigned.error == "task is terminal (cancelled)"
            assert task.to_name == "coder"
        else:
            assert task.to_name == "reviewer"
        assert not task.inbox_messages.filter(acked_at__isnull=True).exists()
        assert_history_consistent(task.task_id)


@pytest.mark.parametrize("round_", ROUNDS)
def test_fifty_concurrent_sends_with_one_client_request_id_make_one_task(agent, round_):
    request_id = f"req-{round_}"
    outcomes = race(
        *[lambda: send_task(actor=agent, alias="coder", task="build", client_request_id=request_id)] * SENDERS
    )

    (task,) = Task.objects.filter(client_request_id=request_id)
    assert {outcome["task_id"] for outcome in outcomes} == {task.task_id}
    assert {outcome["message_id"] for outcome in outcomes} == {task.task_id}
    assert [outcome.get("duplicate", False) for outcome in outcomes].count(True) == SENDERS - 1
    assert list(InboxMessage.objects.values_list("id", "to_alias")) == [(task.task_id, "coder")]
    assert list(TaskEvent.objects.values_list("from_status", "to_status")) == [("", "delivered")]
    # One new_task event: one row in the operators' feed and one in the receiver's, nothing else.
    assert sorted(Event.objects.values_list("type", "audience")) == [("new_task", OPERATORS), ("new_task", "coder")]
    assert not Event.objects.filter(seq__isnull=True).exists()  # every committed event was sealed


def test_a_completion_racing_a_working_heartbeat_never_deadlocks(agent):
    # report_status locks the alias's sessions, then tasks; report_completion must lock in the same order.
    for round_ in range(8):
        task_id = send_task(actor=agent, alias="coder", task=f"race {round_}")["task_id"]
        completed, reported = race(
            lambda task_id=task_id: report_completion(actor=agent, alias="coder", task=task_id, result="done"),
            lambda task_id=task_id: report_status(
                actor=agent, resume_id="r1", alias="coder", status="working", task=task_id
            ),
        )
        assert completed["ok"] and reported["ok"], (completed, reported)
        assert Task.objects.get(pk=task_id).status == "replied"
        assert_history_consistent(task_id)


def test_concurrent_first_heartbeats_of_one_session_make_one_row(agent):
    outcomes = race(*[lambda: report_status(actor=agent, resume_id="fresh", alias="coder", status="idle")] * 8)

    assert all(outcome["ok"] for outcome in outcomes), outcomes
    assert AgentSession.objects.filter(resume_id="fresh").count() == 1


def test_race_fails_on_an_exception_that_is_not_a_hub_error():
    def crash() -> None:
        raise ZeroDivisionError("boom")

    with pytest.raises(AssertionError, match="ZeroDivisionError: boom"):
        race(lambda: {"ok": True}, crash)
    refusal = HubError("task_terminal", "done")
    assert race(lambda: {"ok": True}, lambda: (_ for _ in ()).throw(refusal)) == [{"ok": True}, refusal]


# --- a free-for-all on one task -------------------------------------------------------------------

# Each operation's racers, and the refusals the contract allows it once another racer has won.
FREE_FOR_ALL = {"send_ack": 8, "ack_inbox": 8, "complete": 4, "cancel": 3, "reassign": 3, "retry": 2}
REFUSALS = {
    "send_ack": {"task_terminal"},
    "ack_inbox": {"message_already_acked"},
    "complete": set(),  # report_completion always records; a closed task only earns a warning
    "cancel": {"task_terminal"},
    "reassign": {"task_terminal"},
    "retry": {"task_not_retryable"},
}
OPERATOR_AUDIT = {
    "cancel": AuditEntry.Action.TASK_CANCELLED,
    "reassign": AuditEntry.Action.TASK_REASSIGNED,
    "retry": AuditEntry.Action.TASK_RETRIED,
}
NEW_ALIASES = ["reviewer", "tester", "writer"]


def free_for_all_calls(task_id: str, agents: list[Actor], operator: Actor) -> list[tuple[str, Callable[[], Any]]]:
    def agent(i: int) -> Actor:
        return agents[i % len(agents)]

    calls: list[tuple[str, Callable[[], Any]]] = []
    for i in range(FREE_FOR_ALL["send_ack"]):
        calls.append(("send_ack", lambda i=i: send_ack(actor=agent(i), task_id=task_id, from_session=f"coder-{i}")))
    for i in range(FREE_FOR_ALL["ack_inbox"]):
        calls.append(("ack_inbox", lambda i=i: ack_inbox(actor=agent(i), alias="coder", message_id=task_id)))
    for i in range(FREE_FOR_ALL["complete"]):
        calls.append(
            ("complete", lambda i=i: report_completion(actor=agent(i), alias="coder", task=task_id, result=f"r{i}"))
        )
    for i in range(FREE_FOR_ALL["cancel"]):
        calls.append(("cancel", lambda i=i: cancel_task(actor=operator, task_id=task_id, reason=f"stop {i}")))
    for alias in NEW_ALIASES[: FREE_FOR_ALL["reassign"]]:
        calls.append(("reassign", lambda alias=alias: reassign_task(actor=operator, task_id=task_id, new_alias=alias)))
    for _ in range(FREE_FOR_ALL["retry"]):
        calls.append(("retry", lambda: retry_task(actor=operator, task_id=task_id)))
    return calls


def won(kind: str, outcome: Any, task_id: str) -> bool:
    """Whether this racer's success changed the task (ack_inbox: whether it took the inbox row)."""
    if isinstance(outcome, HubError):
        return False
    if kind == "send_ack":
        return outcome["updated"] == 1
    if kind == "complete":
        return outcome["task_id"] == task_id and "warning" not in outcome
    return True


def step_kind(detail: str) -> str:
    """Which operation wrote a TaskEvent, read from its detail (services.py writes each one)."""
    for prefix, kind in [
        ("acknowledged by ", "send_ack"),
        ("completed by ", "complete"),
        ("cancelled by ", "cancel"),
        ("retried by ", "retry"),
    ]:
        if detail.startswith(prefix):
            return kind
    if " took message " in detail:
        return "ack_inbox"
    if " → " in detail:
        return "reassign"
    raise AssertionError(f"a task event no racer writes: {detail!r}")


@pytest.mark.parametrize("round_", ROUNDS)
def test_a_free_for_all_on_one_task_has_one_winner_per_step(make_actor, network, round_):
    agents = [make_actor(network, "member") for _ in range(4)]
    operator = make_actor(network, "admin")
    task_id = send_task(actor=operator, alias="coder", task=CONTENT, from_session="lead")["task_id"]
    calls = free_for_all_calls(task_id, agents, operator)
    random.Random(round_).shuffle(calls)  # a different start order each round

    outcomes = race(*[call for _, call in calls])

    by_kind: dict[str, list[Any]] = {kind: [] for kind in FREE_FOR_ALL}
    for (kind, _), outcome in zip(calls, outcomes, strict=True):
        by_kind[kind].append(outcome)
        if isinstance(outcome, HubError):
            assert outcome.code in REFUSALS[kind], (kind, outcome)
        else:
            assert isinstance(outcome, dict) and outcome["ok"] is True, (kind, outcome)
    winners = Counter({kind: sum(won(kind, o, task_id) for o in found) for kind, found in by_kind.items()})

    task = Task.objects.get(pk=task_id)
    events = list(TaskEvent.objects.filter(task_id=task_id).order_by("id"))
    steps = [(event.from_status, event.to_status) for event in events]
    assert_history_consistent(task_id)
    assert steps[0] == ("", "delivered")
    assert task.status in {"delivered", "acked", "replied", "cancelled"}, steps

    # One winner per step: every status change is claimed by exactly one racer that was told it won...
    made = Counter(step_kind(event.detail) for event in events[1:])
    assert made["ack_inbox"] <= winners["ack_inbox"] <= 1  # one inbox row: one taker; a send_ack may beat it
    assert +Counter({kind: n for kind, n in made.items() if kind != "ack_inbox"}) == +Counter(
        {kind: n for kind, n in winners.items() if kind != "ack_inbox"}
    ), (steps, winners)
    # ...and by (from_status, to_status): a terminal step at most once per life of the task.
    per_step = Counter(steps)
    deliveries = sum(n for (_, to), n in per_step.items() if to == "delivered")
    assert sum(n for (_, to), n in per_step.items() if to == "acked") <= deliveries
    assert sum(n for (_, to), n in per_step.items() if to == "replied") <= 1
    assert per_step["cancelled", "delivered"] <= sum(n for (_, to), n in per_step.items() if to == "cancelled")
    assert sum(n for (_, to), n in per_step.items() if to == "cancelled") <= per_step["cancelled", "delivered"] + 1

    # Every winning operator call, and nothing else, left its audit row.
    audited = Counter(AuditEntry.objects.filter(target=f"task {task_id}").values_list("action", flat=True))
    assert audited == +Counter({OPERATOR_AUDIT[kind]: winners[kind] for kind in OPERATOR_AUDIT})
    assert sum(audited.values()) == sum(winners[kind] for kind in OPERATOR_AUDIT)

    # The inbox agrees with the task: nothing left to pick up once it ended, one row while it waits.
    pending = list(InboxMessage.objects.filter(task_id=task_id, acked_at__isnull=True).values_list("type", "to_alias"))
    if task.status in TERMINAL:
        assert pending == []
    elif task.status == "delivered":
        assert pending == [("task", task.to_name)]
    else:  # acked: by ack_inbox (its row taken) or by send_ack (which leaves the row alone)
        assert pending in ([], [("task", task.to_name)])
    sent_rows = InboxMessage.objects.filter(task_id=task_id, type="task").count()
    assert sent_rows == 1 + winners["reassign"] + winners["retry"]

    # Every completion is recorded, linked to the task exactly when its answer named the task.
    assert Completion.objects.filter(session_name="coder").count() == FREE_FOR_ALL["complete"]
    linked = sum(1 for o in by_kind["complete"] if o["task_id"] == task_id)
    assert Completion.objects.filter(task_id=task_id).count() == linked

    # The pushed story is the stored one: one task_updated per change, in the same order.
    pushed = Event.objects.filter(type="task_updated", audience=OPERATORS, payload__task_id=task_id).order_by("seq")
    assert [(e.payload["from_status"], e.payload["to_status"]) for e in pushed] == steps[1:]
    assert Event.objects.filter(type="new_task", audience=OPERATORS, payload__task_id=task_id).count() == sent_rows


# --- concurrent completions -----------------------------------------------------------------------


@pytest.mark.parametrize("round_", ROUNDS)
@pytest.mark.parametrize("session", [False, True], ids=["never-reported", "online"])
def test_concurrent_completions_close_the_task_once_and_record_every_report(
    make_actor, network, online, session, round_
):
    """The contract (report_completion): every call INSERTs a completions row, and the task moves
    delivered/acked/running -> replied, matched by task_id first, else by content among the alias's
    open tasks. So of N concurrent reports: N completion rows, one transition, and the task keeps
    the winner's result. A loser that named the task by id is linked to it with a warning; one that
    named it by content finds no open task any more and is recorded unlinked."""
    reporters = [make_actor(network, "member") for _ in range(6)]
    refs = ["id", "id", "id", "id", "content", "content"]
    if session:
        online("coder", status="working", actor=reporters[0])
    task_id = send_task(actor=reporters[0], alias="coder", task=CONTENT, from_session="lead")["task_id"]

    outcomes = race(
        *[
            lambda i=i, ref=ref: report_completion(
                actor=reporters[i], alias="coder", task=task_id if ref == "id" else CONTENT, result=f"result {i}"
            )
            for i, ref in enumerate(refs)
        ]
    )

    assert all(outcome["ok"] is True for outcome in outcomes), outcomes
    winners = [i for i, o in enumerate(outcomes) if o["task_id"] == task_id and "warning" not in o]
    assert len(winners) == 1, outcomes
    task = Task.objects.get(pk=task_id)
    assert (task.status, task.result) == ("replied", f"result {winners[0]}")
    assert TaskEvent.objects.filter(task_id=task_id, to_status="replied").count() == 1
    assert_history_consistent(task_id)

    assert Completion.objects.count() == len(refs)
    for i, (ref, outcome) in enumerate(zip(refs, outcomes, strict=True)):
        if i in winners:
            continue
        if ref == "id":
            assert outcome["task_id"] == task_id and "is replied" in outcome["warning"], outcome
        else:
            assert outcome["task_id"] is None and "without a task" in outcome["warning"], outcome
        assert Completion.objects.get(pk=outcome["completion_id"]).result == f"result {i}"
    linked = Completion.objects.filter(task_id=task_id)
    assert linked.count() == refs.count("id") + (refs[winners[0]] == "content")
    if session:
        assert AgentSession.objects.get(alias="coder").status == "idle"


# --- heartbeats of agents that change alias -------------------------------------------------------


def test_agents_swapping_aliases_at_once_both_get_an_answer(agent):
    pairs = 10  # each pair is a chance to deadlock: on PostgreSQL about one in four does
    for round_ in range(3):
        for i in range(pairs):
            report_status(actor=agent, resume_id=f"r{round_}-{i}", alias=f"left-{round_}-{i}", status="idle")
            report_status(actor=agent, resume_id=f"s{round_}-{i}", alias=f"right-{round_}-{i}", status="idle")
        outcomes = race(
            *[
                call
                for i in range(pairs)
                for call in (
                    lambda i=i, r=round_: report_status(
                        actor=agent, resume_id=f"r{r}-{i}", alias=f"right-{r}-{i}", status="working"
                    ),
                    lambda i=i, r=round_: report_status(
                        actor=agent, resume_id=f"s{r}-{i}", alias=f"left-{r}-{i}", status="working"
                    ),
                )
            ]
        )
        assert all(outcome["ok"] for outcome in outcomes)
