"""Expiry is a deadline, not a job: an overdue waiting task reads as expired the moment anyone looks."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from hub_core.errors import HubError
from hub_core.events import EventType
from hub_tasks.models import Completion, Task, TaskEvent
from tests.helpers.calls import (
    ack_inbox,
    cancel_task,
    get_session_status,
    get_task,
    list_tasks,
    reassign_task,
    report_completion,
    retry_task,
    send_ack,
    send_task_id,
)
from tests.helpers.tasks import pending

pytestmark = pytest.mark.usefixtures("clock")
TTL = 600
CODER, LEAD = "coder", "lead"
CONTENT = "write quicksort"


@pytest.fixture
def send(agent) -> Callable[..., str]:
    def make(ttl: int = TTL, task: str = CONTENT) -> str:
        return send_task_id(agent, task, ttl_seconds=ttl)

    return make


def status_in_get_task(actor, task_id: str) -> str:
    return get_task(actor=actor, task_id=task_id)["task"]["status"]


def status_in_list_tasks(actor, task_id: str) -> str:
    (row,) = [row for row in list_tasks(actor=actor)["tasks"] if row["task_id"] == task_id]
    return row["status"]


def notices(actor, task_id: str) -> list[dict[str, Any]]:
    return [m for m in pending(actor, LEAD) if m["type"] == "notice" and m["task_id"] == task_id]


@pytest.mark.parametrize("read", [status_in_get_task, status_in_list_tasks], ids=["get_task", "list_tasks"])
@pytest.mark.parametrize("waiting", ["delivered", "created"])
def test_a_waiting_task_reads_as_expired_once_its_deadline_passes(send, clock, agent, read, waiting):
    task_id = send()
    Task.objects.filter(pk=task_id).update(status=waiting)

    clock.tick(TTL - 1)
    assert read(agent, task_id) == waiting
    clock.tick(1)
    assert read(agent, task_id) == "expired"

    assert Task.objects.get(pk=task_id).completed_at == timezone.now()
    history = TaskEvent.objects.filter(task_id=task_id).values_list("from_status", "to_status", "actor")
    assert list(history)[-1] == (waiting, "expired", "hub")


def test_an_expired_task_leaves_the_receivers_inbox(send, clock, agent):
    task_id = send()
    assert [m["id"] for m in pending(agent, CODER)] == [task_id]

    clock.tick(TTL)

    assert pending(agent, CODER) == []
    assert get_session_status(actor=agent, alias=CODER)["inbox_pending"] == 0


def test_the_sender_is_told_once_however_often_the_task_is_read(
    send, clock, agent, published, django_capture_on_commit_callbacks
):
    task_id = send()
    clock.tick(TTL + 5)

    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(2):
            get_task(actor=agent, task_id=task_id)
            list_tasks(actor=agent)
            pending(agent, CODER)

    (notice,) = notices(agent, task_id)
    assert task_id in notice["content"]
    assert notice["from_session"] == "hub"
    expired = [event for event in published if event.type == EventType.TASK_EXPIRED]
    assert len(expired) == 1
    assert expired[0].audience == (LEAD,)
    assert expired[0].payload == {"task_id": task_id, "to_name": CODER, "from_name": LEAD, "message_id": notice["id"]}
    assert TaskEvent.objects.filter(task_id=task_id, to_status="expired").count() == 1


@pytest.mark.parametrize("status", ["acked", "running"])
def test_a_task_already_taken_does_not_expire(send, clock, agent, online, status):
    task_id = send()
    if status == "acked":
        ack_inbox(actor=agent, alias=CODER, message_id=task_id)
    else:
        online(CODER, status="working", task=task_id)

    clock.tick(TTL * 10)

    assert status_in_get_task(agent, task_id) == status
    assert status_in_list_tasks(agent, task_id) == status
    assert notices(agent, task_id) == []


def test_a_retried_expired_task_lives_one_more_hour(send, clock, agent):
    task_id = send(ttl=60)
    clock.tick(61)
    assert status_in_get_task(agent, task_id) == "expired"

    retried = retry_task(actor=agent, task_id=task_id)

    assert [m["id"] for m in pending(agent, CODER)] == [retried["message_id"]]
    clock.tick(timedelta(hours=1) - timedelta(seconds=1))
    assert status_in_get_task(agent, task_id) == "delivered"
    clock.tick(1)
    assert status_in_get_task(agent, task_id) == "expired"
    assert len(notices(agent, task_id)) == 2


OVERDUE_REFUSALS: dict[str, tuple[Callable[..., Any], str]] = {
    "cancel_task": (lambda actor, task_id: cancel_task(actor=actor, task_id=task_id), "task is terminal (expired)"),
    "send_ack": (lambda actor, task_id: send_ack(actor=actor, task_id=task_id), "task is terminal (expired)"),
    "reassign_task": (
        lambda actor, task_id: reassign_task(actor=actor, task_id=task_id, new_alias="reviewer"),
        "task is terminal (expired)",
    ),
    "ack_inbox": (
        lambda actor, task_id: ack_inbox(actor=actor, alias=CODER, message_id=task_id),
        "message not found or not yours",
    ),
}


@pytest.mark.parametrize("operation", OVERDUE_REFUSALS)
def test_an_overdue_task_is_refused_as_expired_before_any_read(send, clock, agent, operation):
    call, error = OVERDUE_REFUSALS[operation]
    task_id = send()
    clock.tick(TTL + 1)

    with pytest.raises(HubError) as refused:
        call(actor=agent, task_id=task_id)

    assert refused.value.error == error
    assert status_in_get_task(agent, task_id) == "expired"
    assert len(notices(agent, task_id)) == 1


def test_retrying_an_overdue_delivered_task_expires_it_then_sends_it_again(send, clock, agent):
    task_id = send()
    clock.tick(TTL + 1)

    retried = retry_task(actor=agent, task_id=task_id)

    history = list(TaskEvent.objects.filter(task_id=task_id).values_list("from_status", "to_status"))
    assert history == [("", "delivered"), ("delivered", "expired"), ("expired", "delivered")]
    assert [m["id"] for m in pending(agent, CODER)] == [retried["message_id"]]
    assert Task.objects.get(pk=task_id).expires_at == timezone.now() + timedelta(hours=1)


def test_a_completion_for_an_overdue_task_is_recorded_but_the_task_stays_expired(send, clock, agent):
    task_id = send()
    clock.tick(TTL + 1)

    done = report_completion(actor=agent, alias=CODER, task=task_id, result="too late")

    assert task_id in done["warning"]
    assert Completion.objects.get(pk=done["completion_id"]).result == "too late"
    assert status_in_get_task(agent, task_id) == "expired"
    assert len(notices(agent, task_id)) == 1


def test_working_on_an_overdue_task_does_not_start_it(send, clock, agent, online):
    task_id = send()
    clock.tick(TTL + 1)

    online(CODER, status="working", task=task_id)

    assert status_in_get_task(agent, task_id) == "expired"
    assert len(notices(agent, task_id)) == 1


def test_a_completion_by_content_skips_an_overdue_task_for_an_open_one(send, clock, agent):
    still_open = send(ttl=3600)
    clock.tick(1)
    overdue = send(ttl=60)
    clock.tick(61)

    done = report_completion(actor=agent, alias=CODER, task=CONTENT, result="sorted")

    assert done["task_id"] == still_open
    assert status_in_get_task(agent, still_open) == "replied"
    assert status_in_get_task(agent, overdue) == "expired"


def test_working_by_content_skips_an_overdue_task_for_an_open_one(send, clock, agent, online):
    still_open = send(ttl=3600)
    clock.tick(1)
    overdue = send(ttl=60)
    clock.tick(61)

    online(CODER, status="working", task=CONTENT)

    assert status_in_get_task(agent, still_open) == "running"
    assert status_in_get_task(agent, overdue) == "expired"
