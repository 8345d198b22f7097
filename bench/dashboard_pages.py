"""Dashboard pages at scale: 500 agent sessions and 10,000 tasks; prints each page's time and size.

Usage (a throwaway database; it is created and filled here):
    DATABASE_URL=sqlite:////tmp/commhub-bench.sqlite3 .venv/bin/python bench/dashboard_pages.py
"""

from __future__ import annotations

import os
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "commhub.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402

from hub_agents.models import AgentSession, Network  # noqa: E402
from hub_agents.services import membership_set  # noqa: E402
from hub_tasks.models import InboxMessage, Task, TaskEvent  # noqa: E402

SESSIONS, TASKS = 500, 10_000


def seed() -> tuple[Client, str]:
    call_command("migrate", verbosity=0)
    network, _ = Network.objects.get_or_create(name="bench")
    now = timezone.now()
    AgentSession.objects.filter(network=network).delete()
    Task.objects.filter(network=network).delete()
    AgentSession.objects.bulk_create(
        AgentSession(
            network=network,
            resume_id=f"r{i}",
            alias=f"agent-{i:03}",
            status=("idle", "working", "blocked")[i % 3],
            model="model-x",
            last_seen_at=now - timedelta(seconds=(i * 7) % 1200),
        )
        for i in range(SESSIONS)
    )
    statuses = ("delivered", "acked", "running", "replied", "failed")
    tasks = [
        Task(
            network=network,
            from_name="lead",
            to_name=f"agent-{i % SESSIONS:03}",
            status=statuses[i % 5],
            content=f"task {i}: do something useful",
            created_by="bench",
            sender_key="bench",
            expires_at=now + timedelta(hours=1),
            created_at=now - timedelta(seconds=i),
        )
        for i in range(TASKS)
    ]
    Task.objects.bulk_create(tasks, batch_size=2000)
    InboxMessage.objects.bulk_create(
        (
            InboxMessage(
                network=network, to_alias=t.to_name, type="task", content=t.content, from_session="lead", task=t
            )
            for t in tasks
            if t.status == "delivered"
        ),
        batch_size=2000,
    )
    TaskEvent.objects.bulk_create(
        (
            TaskEvent(
                task=t,
                from_status="running",
                to_status=t.status,
                actor="bench",
                created_at=now - timedelta(minutes=(i * 13) % 1400),
            )
            for i, t in enumerate(tasks)
            if t.status in ("replied", "failed")
        ),
        batch_size=2000,
    )
    operator, _ = get_user_model().objects.get_or_create(username="bench-operator")
    membership_set(user=operator, network=network, role="owner")
    browser = Client()
    browser.force_login(operator)
    return browser, tasks[42].task_id


def main() -> None:
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    browser, task_id = seed()
    print(f"{SESSIONS} sessions, {TASKS} tasks on {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}")
    pages = [
        "/fleet/",
        "/tasks/",
        "/tasks/?page=150",
        "/tasks/?text=useful&status=failed",
        f"/tasks/{task_id}/",
        "/completions/",
        "/dispatch/",
    ]
    for url in pages:
        browser.get(url)  # warm
        runs = []
        for _ in range(5):
            started = time.perf_counter()
            reply = browser.get(url)
            runs.append((time.perf_counter() - started) * 1000)
        print(f"{url:44} {reply.status_code}  median {sorted(runs)[2]:6.1f} ms  {len(reply.content) // 1024:4} KiB")


if __name__ == "__main__":
    main()
