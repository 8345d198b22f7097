"""The write limit holds for the dashboard's writes too, and its refusal reads as operator language."""

from __future__ import annotations

from hub_core import ratelimit
from hub_tasks.models import Task, TaskStatus
from tests.helpers.calls import send_task

TOO_MANY = "Too many changes in a short time; wait a moment and try again."


def limit_writes(settings, limit: str) -> None:
    settings.COMMHUB_WRITE_RATE_LIMIT = limit
    ratelimit.reset()


def test_a_dashboard_dispatch_past_the_write_limit_is_refused(login, online, settings):
    online("coder")
    browser = login()
    limit_writes(settings, "2/minute")

    sent = [browser.post("/dispatch/", {"alias": "coder", "task": f"task {n}"}).status_code for n in range(2)]
    refused = browser.post("/dispatch/", {"alias": "coder", "task": "one too many"})

    assert sent == [302, 302]
    assert refused.status_code == 400
    assert TOO_MANY in refused.content.decode()
    assert not Task.objects.filter(content="one too many").exists()


def test_dashboard_broadcasts_and_task_actions_count_as_writes(login, online, agent, settings):
    online("coder")
    task_id = send_task(actor=agent, alias="coder", task="keep me")["task_id"]
    browser = login()
    limit_writes(settings, "1/minute")

    broadcast = browser.post("/broadcast/", {"message": "deploy at 5"}, follow=True)
    cancel = browser.post(f"/tasks/{task_id}/cancel/", {"reason": "no longer needed"}, follow=True)

    assert "Broadcast to 1 agents." in broadcast.content.decode()
    assert TOO_MANY in cancel.content.decode()
    assert Task.objects.get(pk=task_id).status == TaskStatus.DELIVERED
