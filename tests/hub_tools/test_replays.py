"""Replay keys (issue 25's outbox): a report sent again with its idempotency_key records once and
answers as the first call did; the same key with other arguments is refused; the sweep prunes old
keys. Races: two first calls at once, on real connections, record once."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

import pytest
from django.core.management import call_command
from django.utils import timezone

from hub_agents.models import AgentSession
from hub_core.errors import HubError
from hub_events.models import Event
from hub_tasks.models import AgentUsage, Completion, InboxMessage, TaskAttempt, TaskEvent
from hub_tools.models import ReplayKey
from tests.helpers.calls import (
    ack_inbox,
    get_inbox,
    report_completion,
    report_status,
    send_reply,
    send_task_id,
)
from tests.helpers.races import race
from tests.helpers.tasks import take

CODER, LEAD = "coder", "lead"


send = partial(send_task_id, task="write quicksort")


def written() -> tuple[int, ...]:
    """Rows every write leaves behind: completions, inbox rows, task history, events, replay keys."""
    return tuple(m.objects.count() for m in (Completion, InboxMessage, TaskEvent, Event, ReplayKey))


@pytest.mark.django_db
def test_a_replayed_completion_answers_the_first_answer_and_writes_nothing(agent):
    task_id = send(agent)
    take(agent, task_id)
    call = {"alias": CODER, "task": task_id, "result": "done", "tokens_in": 5, "idempotency_key": "n1:task:1:done"}

    first = report_completion(actor=agent, **call)
    before = written()
    again = report_completion(actor=agent, **call)

    assert again == first
    assert written() == before
    assert Completion.objects.filter(task_id=task_id).count() == 1
    assert AgentUsage.objects.get(alias=CODER).runs == 1


@pytest.mark.django_db
def test_a_lost_answer_to_a_failed_tasks_completion_leaves_one_completion_row(agent):
    task_id = send(agent)
    take(agent, task_id)
    send_reply(actor=agent, alias=LEAD, text="broke", in_reply_to=task_id, status="failed", from_session=CODER)
    call = {"alias": CODER, "task": task_id, "result": "broke", "idempotency_key": "n1:fail"}

    first = report_completion(actor=agent, **call)
    assert "warning" in first  # the task is failed: recorded, the task unchanged
    assert report_completion(actor=agent, **call) == first

    assert Completion.objects.filter(task_id=task_id).count() == 1


@pytest.mark.django_db
def test_a_replayed_reply_sends_no_second_reply(agent):
    task_id = send(agent)
    take(agent, task_id)
    call = {"alias": LEAD, "text": "here", "in_reply_to": task_id, "from_session": CODER, "idempotency_key": "r1"}

    first = send_reply(actor=agent, **call)
    again = send_reply(actor=agent, **call)

    assert again == first  # without the key the second would be refused: task is terminal
    assert InboxMessage.objects.filter(task_id=task_id, type="reply").count() == 1


@pytest.mark.django_db
def test_a_replayed_ack_and_status_answer_as_before_and_touch_nothing(agent, clock):
    task_id = send(agent)
    (message,) = get_inbox(actor=agent, alias=CODER)["messages"]
    ack = {"alias": CODER, "message_id": message["id"], "idempotency_key": "a1"}
    assert ack_inbox(actor=agent, **ack) == {"ok": True}
    assert ack_inbox(actor=agent, **ack) == {"ok": True}  # without the key: message_already_acked

    status = {"resume_id": "r", "alias": CODER, "status": "working", "task": task_id, "idempotency_key": "s1"}
    first = report_status(actor=agent, **status)
    seen = AgentSession.objects.get(alias=CODER).last_seen_at
    clock.tick(timedelta(seconds=30))
    assert report_status(actor=agent, **status) == first
    assert AgentSession.objects.get(alias=CODER).last_seen_at == seen
    assert TaskEvent.objects.filter(task_id=task_id, to_status="running").count() == 1


@pytest.mark.django_db
def test_a_key_reused_with_other_arguments_or_another_tool_is_refused(agent):
    task_id = send(agent)
    take(agent, task_id)
    report_completion(actor=agent, alias=CODER, task=task_id, result="done", idempotency_key="k")

    for call in (
        lambda: report_completion(actor=agent, alias=CODER, task=task_id, result="other", idempotency_key="k"),
        lambda: send_reply(actor=agent, alias=LEAD, text="x", idempotency_key="k"),
    ):
        with pytest.raises(HubError) as refused:
            call()
        assert refused.value.code == "idempotency_key_reused"
        assert refused.value.status == 409
    assert Completion.objects.count() == 1


@pytest.mark.django_db
def test_a_key_is_the_callers_own_and_a_refused_call_stores_none(agent, make_actor, network):
    other = make_actor(network, "member")
    task_id = send(agent)
    take(agent, task_id)
    call = {"alias": CODER, "task": task_id, "result": "done", "idempotency_key": "same"}
    report_completion(actor=agent, **call)

    report_completion(actor=other, **call)  # another token: its own key, its own completion
    with pytest.raises(HubError):
        send_reply(actor=agent, alias=LEAD, text="x", in_reply_to="no-such-task", idempotency_key="refused")

    assert Completion.objects.count() == 2
    assert not ReplayKey.objects.filter(key="refused").exists()


@pytest.mark.django_db
def test_the_sweep_prunes_keys_older_than_seven_days(agent, clock):
    task_id = send(agent)
    take(agent, task_id)
    report_completion(actor=agent, alias=CODER, task=task_id, result="done", idempotency_key="old")
    clock.tick(timedelta(days=6))
    report_completion(actor=agent, alias=CODER, task=task_id, result="again", idempotency_key="newer")
    clock.tick(timedelta(days=1, seconds=1))

    call_command("sweep", "--once")

    assert list(ReplayKey.objects.values_list("key", flat=True)) == ["newer"]
    assert ReplayKey.objects.get().created_at > timezone.now() - timedelta(days=7)


@pytest.mark.race
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("round", range(3))
def test_concurrent_first_calls_with_one_key_record_once_and_answer_alike(agent, round):
    task_id = send(agent)
    take(agent, task_id)
    call = {"alias": CODER, "task": task_id, "result": "done", "tokens_out": 9, "idempotency_key": f"race-{round}"}

    outcomes = race(*[lambda: report_completion(actor=agent, **call)] * 4)

    assert all(outcome == outcomes[0] for outcome in outcomes), outcomes
    assert Completion.objects.filter(task_id=task_id).count() == 1
    assert TaskEvent.objects.filter(task_id=task_id, to_status="replied").count() == 1
    assert TaskAttempt.objects.get(task_id=task_id).tokens_out == 9
    assert AgentUsage.objects.get(alias=CODER).runs == 1
