"""Selectors only read: settling deadlines is the services' explicit step (tasks_expire_due)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from hub_tasks.models import InboxMessage, Task, TaskEvent
from hub_tasks.selectors import inbox_pending, task_page, task_rows, task_with_history
from tests.helpers.calls import get_inbox, get_task, list_tasks, send_task


@pytest.fixture
def overdue(agent) -> str:
    task_id = send_task(actor=agent, alias="coder", task="late")["task_id"]
    Task.objects.filter(pk=task_id).update(expires_at=timezone.now() - timedelta(seconds=1))
    return task_id


def test_the_selectors_show_an_overdue_task_as_stored_and_write_nothing(agent, network, overdue):
    rows_before = (TaskEvent.objects.count(), InboxMessage.objects.count())

    assert task_with_history(actor=agent, task_id=overdue).task["status"] == "delivered"
    assert [row["status"] for row in task_rows(actor=agent).tasks] == ["delivered"]
    assert len(inbox_pending(actor=agent, alias="coder")) == 1
    tasks, _ = task_page(actor=agent, network_id=network.id)
    assert [task.status for task in tasks] == ["delivered"]
    assert (TaskEvent.objects.count(), InboxMessage.objects.count()) == rows_before


@pytest.mark.parametrize(
    "look",
    [
        lambda agent, task_id: get_task(actor=agent, task_id=task_id),
        lambda agent, task_id: list_tasks(actor=agent),
        lambda agent, task_id: get_inbox(actor=agent, alias="coder"),
    ],
    ids=["get_task", "list_tasks", "get_inbox"],
)
def test_the_tools_settle_deadlines_before_they_read(agent, overdue, look):
    look(agent, overdue)
    assert Task.objects.get(pk=overdue).status == "expired"
