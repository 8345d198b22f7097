"""A lapsed lease is applied once, whoever races to settle it: sweepers and readers on their own
connections (on PostgreSQL, real row locks; on SQLite, serialised writers reach the same outcome)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from hub_tasks.models import InboxMessage, Task, TaskEvent
from tests.helpers.calls import get_task, send_ack, send_task
from tests.helpers.races import race

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.race]
ROUNDS = range(4)


@pytest.mark.parametrize("round_", ROUNDS)
@pytest.mark.parametrize(("on_lost", "after"), [("requeue", "delivered"), ("fail", "failed")])
def test_a_lapsed_lease_is_applied_once_by_racing_sweepers_and_readers(agent, on_lost, after, round_):
    task_id = send_task(actor=agent, alias="coder", task="index the logs", from_session="lead", lease_seconds=60,
                        on_lost=on_lost)["task_id"]  # fmt: skip
    send_ack(actor=agent, task_id=task_id, from_session="coder")
    # The agent went silent a minute ago (real time: the racers run on threads of their own).
    Task.objects.filter(pk=task_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))

    def sweep() -> None:
        call_command("sweep", "--once", verbosity=0)

    race(sweep, sweep, lambda: get_task(actor=agent, task_id=task_id), sweep)

    assert Task.objects.get(pk=task_id).status == after
    lost = TaskEvent.objects.filter(task_id=task_id, from_status="acked", actor="hub")
    assert list(lost.values_list("to_status", flat=True)) == [after]
    notices = InboxMessage.objects.filter(task_id=task_id, to_alias="lead", type=InboxMessage.Type.NOTICE)
    assert notices.count() == 1
    attempts = list(Task.objects.get(pk=task_id).attempts.order_by("number").values_list("outcome", flat=True))
    assert attempts == (["lost", ""] if on_lost == "requeue" else ["lost"])
    pending = InboxMessage.objects.filter(task_id=task_id, to_alias="coder", type="task", acked_at__isnull=True)
    assert pending.count() == (1 if on_lost == "requeue" else 0)
