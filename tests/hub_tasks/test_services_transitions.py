"""Every task operation from every task status, as the MCP tool contract allows or refuses it.

Tasks reach their status through the public services only (`task_in`), and every call goes
through `attempt`, which checks the two invariants of each transition on the way: one TaskEvent
and one task_updated push per status change, and nothing at all changed or pushed by a refusal.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from hub_agents.models import AgentSession
from hub_core.errors import HubError
from hub_core.events import EventType, HubEvent
from hub_tasks.models import Completion, InboxMessage, Task, TaskEvent
from tests.helpers.calls import (
    ack_inbox,
    cancel_task,
    get_completions,
    get_session_status,
    get_task,
    reassign_task,
    report_completion,
    retry_task,
    send_ack,
    send_reply,
    send_task,
)
from tests.helpers.tasks import pending

pytestmark = pytest.mark.usefixtures("clock")
TTL = 600
CODER, OTHER, LEAD = "coder", "reviewer", "lead"
CONTENT = "write quicksort"

ACTIVE = ["created", "delivered", "acked", "running"]
TERMINAL = ["replied", "failed", "cancelled", "expired"]
RETRYABLE = ["failed", "expired", "cancelled"]


@pytest.fixture
def task_in(agent, online, clock) -> Callable[..., str]:
    """task_in(status): a task from LEAD to CODER, brought to `status` the way agents and hubs do it."""

    def make(status: str, **send: Any) -> str:
        send = {"from_session": LEAD, "ttl_seconds": TTL, **send}
        task_id = send_task(actor=agent, alias=CODER, task=CONTENT, **send)["task_id"]
        match status:
            case "created":  # only a direct write reaches it: send_task delivers at once
                Task.objects.filter(pk=task_id).update(status="created")
            case "acked":
                ack_inbox(actor=agent, alias=CODER, message_id=task_id)
            case "running":
                online(CODER, status="working", task=task_id)
            case "replied":
                report_completion(actor=agent, alias=CODER, task=task_id, result="done")
            case "failed":
                send_reply(actor=agent, alias=LEAD, text="cannot", in_reply_to=task_id, status="failed")
            case "cancelled":
                cancel_task(actor=agent, task_id=task_id)
            case "expired":
                clock.tick(timedelta(seconds=send["ttl_seconds"] + 1))
        assert row(agent, task_id)["status"] == status
        return task_id

    return make


def row(actor, task_id: str) -> dict[str, Any]:
    return get_task(actor=actor, task_id=task_id)["task"]


def pending_ids(actor, alias: str) -> list[str]:
    return [message["id"] for message in pending(actor, alias)]


def state(task_id: str) -> dict[str, Any]:
    """Everything an operation on the task could change."""
    return {
        "task": Task.objects.filter(pk=task_id).values().get(),
        "events": list(TaskEvent.objects.filter(task_id=task_id).values_list("id", flat=True)),
        "inbox": list(InboxMessage.objects.order_by("id").values_list("id", "acked_at")),
        "completions": Completion.objects.count(),
        "sessions": list(AgentSession.objects.order_by("id").values()),
    }


@dataclass
class Outcome:
    result: dict[str, Any] | None
    error: HubError | None
    moves: list[tuple[str, str, str]]  # (from_status, to_status, actor) of the TaskEvents written
    pushed: list[HubEvent]
    before: dict[str, Any]
    after: dict[str, Any]


@pytest.fixture
def attempt(django_capture_on_commit_callbacks, published) -> Callable[..., Outcome]:
    """attempt(task_id, operation, **kwargs): call it, and check what it wrote against what it pushed."""

    def call(task_id: str, operation: Callable[..., dict[str, Any]], /, **kwargs: Any) -> Outcome:
        before = state(task_id)
        published.clear()
        result = error = None
        with django_capture_on_commit_callbacks(execute=True):
            try:
                result = operation(**kwargs)
            except HubError as exc:
                error = exc
        after = state(task_id)
        moves = list(
            TaskEvent.objects.filter(task_id=task_id)
            .exclude(pk__in=before["events"])
            .order_by("id")
            .values_list("from_status", "to_status", "actor")
        )
        updates = [
            (event.payload["from_status"], event.payload["to_status"], event.payload["actor"])
            for event in published
            if event.type == EventType.TASK_UPDATED and event.payload["task_id"] == task_id
        ]
        assert updates == moves, "each TaskEvent is pushed once as task_updated, and nothing else is"
        if error is not None:
            assert after == before, f"refused with {error!r} but changed something"
            assert published == [], "a refused operation pushed events"
        return Outcome(result, error, moves, list(published), before, after)

    return call


def terminal_error(status: str) -> str:
    return f"task is terminal ({status})"


# ack_inbox


@pytest.mark.parametrize(("status", "moves_to"), [("created", None), ("delivered", "acked"), ("running", None)])
def test_ack_inbox_takes_the_message_and_moves_only_a_delivered_task(task_in, attempt, agent, status, moves_to):
    task_id = task_in(status)
    assert task_id in pending_ids(agent, CODER)

    out = attempt(task_id, ack_inbox, actor=agent, alias=CODER, message_id=task_id)

    assert out.result == {"ok": True}
    assert out.moves == ([(status, moves_to, agent.label)] if moves_to else [])
    assert row(agent, task_id)["status"] == (moves_to or status)
    assert task_id not in pending_ids(agent, CODER)


# "acked": the message was acknowledged once already; terminal: the finished task's message was withdrawn.
@pytest.mark.parametrize("status", ["acked", *TERMINAL])
def test_ack_inbox_of_a_message_no_longer_pending_is_refused(task_in, attempt, agent, status):
    task_id = task_in(status)

    out = attempt(task_id, ack_inbox, actor=agent, alias=CODER, message_id=task_id)

    assert out.error.error == "message not found or not yours"


@pytest.mark.parametrize(
    ("who", "alias", "message_id", "error"),
    [
        ("agent", OTHER, "the task", "message not found or not yours"),
        ("agent", CODER, "no-such-message", "message not found or not yours"),
        ("outsider", CODER, "the task", "message not found or not yours"),
        ("viewer", CODER, "the task", "permission_denied"),
    ],
    ids=["another alias's message", "unknown id", "another network", "viewer"],
)
def test_ack_inbox_refusals(task_in, attempt, request, agent, who, alias, message_id, error):
    task_id = task_in("delivered")
    actor = request.getfixturevalue(who)

    out = attempt(
        task_id, ack_inbox, actor=actor, alias=alias, message_id=task_id if message_id == "the task" else message_id
    )

    assert out.error.error == error
    assert task_id in pending_ids(agent, CODER)


# send_ack


@pytest.mark.parametrize(("status", "updated"), [("created", 1), ("delivered", 1), ("acked", 0), ("running", 0)])
def test_send_ack_acknowledges_created_and_delivered_tasks_only(task_in, attempt, agent, status, updated):
    task_id = task_in(status)
    inbox_before = pending_ids(agent, CODER)

    out = attempt(task_id, send_ack, actor=agent, task_id=task_id)

    assert out.result == {"ok": True, "task_id": task_id, "updated": updated}
    assert out.moves == ([(status, "acked", agent.label)] if updated else [])
    assert row(agent, task_id)["status"] == ("acked" if updated else status)
    assert pending_ids(agent, CODER) == inbox_before, "send_ack does not touch the inbox"
    assert out.after["inbox"] == out.before["inbox"]


@pytest.mark.parametrize("status", TERMINAL)
def test_send_ack_of_a_finished_task_is_refused(task_in, attempt, agent, status):
    task_id = task_in(status)

    out = attempt(task_id, send_ack, actor=agent, task_id=task_id)

    assert out.error.error == terminal_error(status)


# retry_task


@pytest.mark.parametrize("status", RETRYABLE)
def test_retry_sends_the_same_task_again_in_a_new_inbox_row(task_in, attempt, agent, status):
    task_id = task_in(status)

    out = attempt(task_id, retry_task, actor=agent, task_id=task_id)

    new_message = out.result["message_id"]
    assert out.result == {"ok": True, "task_id": task_id, "retried_to": CODER, "message_id": new_message}
    assert new_message != task_id
    assert out.moves == [(status, "delivered", agent.label)]
    assert pending_ids(agent, CODER) == [new_message]
    retried = Task.objects.get(pk=task_id)
    assert (retried.status, retried.result, retried.completed_at) == ("delivered", None, None)
    assert retried.delivered_at == timezone.now()
    new_task_pushes = [e.payload for e in out.pushed if e.type == EventType.NEW_TASK]
    assert [(p["message_id"], p["task_id"]) for p in new_task_pushes] == [(new_message, task_id)]


@pytest.mark.parametrize("ttl", [60, TTL, 86_400])
def test_retry_grants_one_hour_whatever_the_first_ttl(task_in, agent, ttl):
    task_id = task_in("failed", ttl_seconds=ttl)

    retry_task(actor=agent, task_id=task_id)

    assert Task.objects.get(pk=task_id).expires_at == timezone.now() + timedelta(hours=1)


@pytest.mark.parametrize("status", ["created", "delivered", "acked", "running", "replied"])
def test_retry_of_a_task_that_has_not_failed_is_refused(task_in, attempt, agent, status):
    task_id = task_in(status)

    out = attempt(task_id, retry_task, actor=agent, task_id=task_id)

    assert out.error.error == f"task status is {status}, not retryable"


def test_acking_the_retried_row_acks_the_retried_task(task_in, attempt, agent):
    task_id = task_in("cancelled")
    new_message = retry_task(actor=agent, task_id=task_id)["message_id"]

    out = attempt(task_id, ack_inbox, actor=agent, alias=CODER, message_id=new_message)

    assert out.moves == [("delivered", "acked", agent.label)]
    assert pending_ids(agent, CODER) == []


# cancel_task


@pytest.mark.parametrize("status", ACTIVE)
def test_cancel_stops_an_unfinished_task_and_withdraws_its_message(task_in, attempt, agent, status):
    task_id = task_in(status)

    out = attempt(task_id, cancel_task, actor=agent, task_id=task_id, reason="not needed")

    assert out.result == {"ok": True, "task_id": task_id, "cancelled": True}
    assert out.moves == [(status, "cancelled", agent.label)]
    assert row(agent, task_id)["status"] == "cancelled"
    assert task_id not in pending_ids(agent, CODER)


@pytest.mark.parametrize("status", TERMINAL)
def test_cancel_of_a_finished_task_is_refused(task_in, attempt, agent, status):
    task_id = task_in(status)

    out = attempt(task_id, cancel_task, actor=agent, task_id=task_id)

    result = out.error.as_result()
    assert (result["ok"], result["cancelled"], result["error"]) == (False, False, terminal_error(status))


@pytest.mark.parametrize(("length", "accepted"), [(1000, True), (1001, False)])
def test_cancel_reason_is_at_most_1000_characters(task_in, attempt, agent, length, accepted):
    task_id = task_in("delivered")

    out = attempt(task_id, cancel_task, actor=agent, task_id=task_id, reason="r" * length)

    if accepted:
        assert out.result["cancelled"] is True
    else:
        assert (out.error.code, out.error.extra["field"]) == ("invalid_argument", "reason")


# reassign_task


@pytest.mark.parametrize("status", ACTIVE)
def test_reassign_delivers_the_task_afresh_to_the_new_alias(task_in, attempt, clock, agent, status):
    task_id = task_in(status)
    expires_at = Task.objects.get(pk=task_id).expires_at
    clock.tick(timedelta(seconds=60))

    out = attempt(task_id, reassign_task, actor=agent, task_id=task_id, new_alias=OTHER)

    new_message = out.result["message_id"]
    assert out.result["ok"] is True
    assert (out.result["reassigned_from"], out.result["reassigned_to"]) == (CODER, OTHER)
    assert out.moves == [(status, "delivered", agent.label)]
    task = Task.objects.get(pk=task_id)
    assert (task.status, task.to_name, task.started_at) == ("delivered", OTHER, None)
    assert task.delivered_at == timezone.now()
    assert task.expires_at == expires_at
    assert task_id not in pending_ids(agent, CODER)
    assert new_message != task_id
    assert pending_ids(agent, OTHER) == [new_message]
    (update,) = [e for e in out.pushed if e.type == EventType.TASK_UPDATED]
    assert set(update.audience) == {OTHER, LEAD, CODER}, "the old receiver hears it lost the task"


def test_reassign_interrupts_a_running_task(task_in, agent):
    task_id = task_in("running")
    assert Task.objects.get(pk=task_id).started_at is not None

    reassign_task(actor=agent, task_id=task_id, new_alias=OTHER)

    assert row(agent, task_id)["started_at"] is None


@pytest.mark.parametrize("status", TERMINAL)
def test_reassign_of_a_finished_task_is_refused(task_in, attempt, agent, status):
    task_id = task_in(status)

    out = attempt(task_id, reassign_task, actor=agent, task_id=task_id, new_alias=OTHER)

    assert out.error.error == terminal_error(status)
    assert pending_ids(agent, OTHER) == []


# report_completion


@pytest.mark.parametrize("status", ["delivered", "acked", "running"])
def test_completion_by_task_id_replies_the_task(task_in, attempt, agent, status):
    task_id = task_in(status)

    out = attempt(task_id, report_completion, actor=agent, alias=CODER, task=task_id, result="sorted")

    assert out.result == {"ok": True, "completion_id": out.result["completion_id"], "task_id": task_id}
    assert out.moves == [(status, "replied", agent.label)]
    task = row(agent, task_id)
    assert (task["status"], task["result"]) == ("replied", "sorted")
    assert task_id not in pending_ids(agent, CODER)


@pytest.mark.parametrize("status", ["created", *TERMINAL])
def test_completion_for_a_task_it_cannot_close_is_recorded_with_a_warning(task_in, attempt, agent, status):
    task_id = task_in(status)

    out = attempt(task_id, report_completion, actor=agent, alias=CODER, task=task_id, result="late")

    assert out.result["ok"] is True
    assert task_id in out.result["warning"]
    assert out.moves == []
    assert out.after["task"] == out.before["task"]
    assert Completion.objects.get(pk=out.result["completion_id"]).task_id == task_id


def test_completion_by_content_closes_the_latest_open_task_of_that_alias(task_in, clock, agent):
    older = task_in("delivered")
    clock.tick(1)
    newer = task_in("acked")
    clock.tick(1)
    task_in("cancelled")  # newest with that content, but finished
    clock.tick(1)
    elsewhere = send_task(actor=agent, alias=OTHER, task=CONTENT)["task_id"]

    done = report_completion(actor=agent, alias=CODER, task=CONTENT, result="sorted")

    assert done["task_id"] == newer
    statuses = {task_id: row(agent, task_id)["status"] for task_id in (older, newer, elsewhere)}
    assert statuses == {older: "delivered", newer: "replied", elsewhere: "delivered"}


def test_completion_by_task_id_closes_the_task_whoever_it_is_addressed_to_now(agent):
    # The contract matches task_id first, with no alias condition: an agent that finishes a task
    # which was reassigned away meanwhile still closes it.
    task_id = send_task(actor=agent, alias=CODER, task=CONTENT)["task_id"]
    reassign_task(actor=agent, task_id=task_id, new_alias=OTHER)

    done = report_completion(actor=agent, alias=CODER, task=task_id, result="finished anyway")

    assert (done["task_id"], "warning" in done) == (task_id, False)
    assert row(agent, task_id)["status"] == "replied"


def test_completion_matching_no_task_is_still_recorded(agent):
    done = report_completion(actor=agent, alias=CODER, task="something nobody asked for", result="did it")

    # Recorded all the same, and said so (issue 24): the caller learns its task argument named nothing.
    assert (done["ok"], done["task_id"]) == (True, None)
    assert "recorded without a task" in done["warning"]
    rows = get_completions(actor=agent, alias=CODER)["completions"]
    assert [(r["id"], r["task"], r["result"]) for r in rows] == [
        (done["completion_id"], "something nobody asked for", "did it")
    ]


def test_completion_keeps_the_whole_result_but_the_task_only_4000_characters(task_in, agent):
    task_id = task_in("running")
    result = "".join(str(i % 10) for i in range(50_000))

    done = report_completion(actor=agent, alias=CODER, task=task_id, result=result)

    assert row(agent, task_id)["result"] == result[:4000]
    (recorded,) = get_completions(actor=agent, alias=CODER)["completions"]
    assert (recorded["id"], recorded["result"]) == (done["completion_id"], result)


def test_completion_sets_the_alias_idle(task_in, online, agent):
    task_id = task_in("delivered")
    online(CODER, status="working", task=task_id, progress=50)

    report_completion(actor=agent, alias=CODER, task=task_id, result="done")

    session = get_session_status(actor=agent, alias=CODER)["session"]
    assert (session["status"], session["task"], session["progress"]) == ("idle", None, 0)


def test_completion_stores_artifacts_as_a_json_string(agent):
    artifacts = [f"/tmp/out-{i}.py" for i in range(50)]

    report_completion(actor=agent, alias=CODER, task="t", result="r", artifacts=artifacts, score=10)

    (recorded,) = get_completions(actor=agent, alias=CODER)["completions"]
    assert isinstance(recorded["artifacts"], str)
    assert json.loads(recorded["artifacts"]) == artifacts
    assert recorded["score"] == 10


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("result", "x" * 50_001),
        ("artifacts", [f"/tmp/{i}" for i in range(51)]),
        ("score", 10.5),
        ("score", -1),
    ],
    ids=["result 50001", "51 artifacts", "score 10.5", "score -1"],
)
def test_completion_out_of_limits_is_refused(task_in, attempt, agent, field, value):
    task_id = task_in("running")
    call = {"result": "done", field: value}

    out = attempt(task_id, report_completion, actor=agent, alias=CODER, task=task_id, **call)

    assert (out.error.code, out.error.extra["field"]) == ("invalid_argument", field)


@pytest.mark.parametrize("score", [0, 10])
def test_completion_score_bounds_are_inclusive(agent, score):
    done = report_completion(actor=agent, alias=CODER, task="t", result="r", score=score)

    assert Completion.objects.get(pk=done["completion_id"]).score == score


def test_completion_of_a_child_task_chains_the_reply_to_the_parents_sender(agent, attempt):
    parent = send_task(actor=agent, alias=LEAD, task="ship sorting", from_session="boss")["task_id"]
    child = send_task(actor=agent, alias=CODER, task=CONTENT, from_session=LEAD, parent_task_id=parent)["task_id"]

    out = attempt(child, report_completion, actor=agent, alias=CODER, task=child, result="sorted")

    chained = [event for event in out.pushed if event.type == EventType.CHAINED_REPLY]
    assert len(chained) == 1
    (message,) = [m for m in pending(agent, "boss") if m["type"] == "chained_reply"]
    assert chained[0].audience == ("boss",)
    assert chained[0].payload == {
        "parent_task_id": parent,
        "child_task_id": child,
        "from_alias": CODER,
        "status": "replied",
        "result": "sorted",
        "message_id": message["id"],
    }
    assert (message["content"], message["from_session"], message["task_id"]) == ("sorted", CODER, parent)
    assert row(agent, parent)["status"] == "delivered"


# Who may do what


WRITES: dict[str, tuple[str, Callable[..., Any]]] = {
    "ack_inbox": ("delivered", lambda actor, task_id: ack_inbox(actor=actor, alias=CODER, message_id=task_id)),
    "send_ack": ("delivered", lambda actor, task_id: send_ack(actor=actor, task_id=task_id)),
    "retry_task": ("failed", lambda actor, task_id: retry_task(actor=actor, task_id=task_id)),
    "cancel_task": ("delivered", lambda actor, task_id: cancel_task(actor=actor, task_id=task_id)),
    "reassign_task": ("delivered", lambda actor, task_id: reassign_task(actor=actor, task_id=task_id, new_alias=OTHER)),
    "send_reply": (
        "delivered",
        lambda actor, task_id: send_reply(actor=actor, alias=LEAD, text="done", in_reply_to=task_id),
    ),
    "report_completion": (
        "delivered",
        lambda actor, task_id: report_completion(actor=actor, alias=CODER, task=task_id, result="done"),
    ),
}
TASK_OPERATIONS = {
    **{name: WRITES[name] for name in ("send_ack", "retry_task", "cancel_task", "reassign_task", "send_reply")},
    "get_task": ("delivered", lambda actor, task_id: get_task(actor=actor, task_id=task_id)),
}


@pytest.mark.parametrize("operation", WRITES)
def test_a_viewer_may_not_write(task_in, attempt, viewer, operation):
    status, call = WRITES[operation]
    task_id = task_in(status)

    out = attempt(task_id, call, actor=viewer, task_id=task_id)

    assert (out.error.code, out.error.error) == ("permission_denied", "permission_denied")


@pytest.mark.parametrize("operation", TASK_OPERATIONS)
def test_another_networks_actor_does_not_find_the_task(task_in, attempt, outsider, operation):
    status, call = TASK_OPERATIONS[operation]
    task_id = task_in(status)

    out = attempt(task_id, call, actor=outsider, task_id=task_id)

    assert out.error.error == "task not found"


@pytest.mark.parametrize("operation", TASK_OPERATIONS)
def test_an_unknown_task_id_is_not_found(task_in, attempt, agent, operation):
    status, call = TASK_OPERATIONS[operation]
    task_id = task_in(status)

    out = attempt(task_id, call, actor=agent, task_id="no-such-task")

    assert out.error.error == "task not found"


def test_another_networks_completion_does_not_close_the_task(task_in, attempt, outsider, agent):
    task_id = task_in("running")

    out = attempt(task_id, report_completion, actor=outsider, alias=CODER, task=task_id, result="done")

    assert out.result["task_id"] is None
    assert out.moves == []
    assert out.after["task"] == out.before["task"]
    assert row(agent, task_id)["status"] == "running"
