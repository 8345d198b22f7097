"""Every dashboard page, shot at desktop and phone size into tests/dashboard/screenshots/ for people
to look at (issue 12's "Done when"); each shot also checks the page loads cleanly and fits its width."""

from __future__ import annotations

from typing import Any

import pytest

from hub_agents.services import membership_set
from hub_tasks.models import Task
from tests.helpers.dashboard import SIZES
from tests.helpers.live import mcp_ok

pytestmark = pytest.mark.django_db(transaction=True)
AGENTS = [
    ("coder", "working", "porting the parser to the new grammar", 60),
    ("reviewer", "idle", None, None),
    ("docs", "blocked", "waiting for the API freeze", None),
    ("qa", "error", "test runner crashed: exit 137", None),
    ("release", "waiting_input", "which version number?", None),
    ("infra", "working", "rotating the staging certificates", 25),
]


def seed(hub: Any, agent: Any) -> str:
    """A small busy network: agents in every state, tasks in several, completions. The task to shoot."""
    for alias, status, task, progress in AGENTS:
        mcp_ok(hub, agent, "report_status", resume_id=f"r-{alias}", alias=alias, status=status, task=task,
            progress=progress, model="model-x", agent="claude-code", hostname="build-01")  # fmt: skip
    texts = [
        "Write the release notes for 2.4",
        "Review PR 212: the new rate limiter",
        "Rename the config module and fix imports",
        "Publish the docs site",
        "Bisect the flaky websocket test",
        "Update the changelog",
    ]
    ids = [
        agent.send_task(hub, alias, text)["task_id"]
        for alias, text in zip(["coder", "reviewer"] * 3, texts, strict=True)
    ]
    for task_id, outcome in [(ids[0], "replied"), (ids[1], "failed"), (ids[2], "running")]:
        alias = "coder" if ids.index(task_id) % 2 == 0 else "reviewer"
        (message,) = [
            m for m in mcp_ok(hub, agent, "get_inbox", alias=alias)["messages"] if m.get("task_id") == task_id
        ]
        mcp_ok(hub, agent, "ack_inbox", alias=alias, message_id=message["id"])
        mcp_ok(hub, agent, "report_status", resume_id=f"r-{alias}", alias=alias, status="working", task=task_id)
        if outcome == "replied":
            mcp_ok(
                hub, agent, "report_completion", alias=alias, task=task_id, result="Notes written: 14 changes.", score=8
            )
        elif outcome == "failed":
            sender = Task.objects.get(pk=task_id).from_name
            mcp_ok(
                hub,
                agent,
                "send_reply",
                alias=sender,
                text="registry is down (503)",
                in_reply_to=task_id,
                status="failed",
            )
    return ids[0]


@pytest.fixture
def people(network, django_user_model):
    operator = django_user_model.objects.create_user("ada", password="unused")
    viewer = django_user_model.objects.create_user("vic", password="unused")
    loner = django_user_model.objects.create_user("nemo", password="unused")  # in no network
    membership_set(user=operator, network=network, role="owner")
    membership_set(user=viewer, network=network, role="viewer")
    return {"operator": operator, "viewer": viewer, "loner": loner, "nobody": None}


def test_every_page_at_desktop_and_phone_size(hub_server, page_for, agent_http, people, screenshot_dir):
    hub = hub_server()
    task_id = seed(hub, agent_http)
    shots = [
        ("fleet", "operator", "/fleet/"),
        ("fleet-table", "operator", "/fleet/?view=table&sort=status"),
        ("tasks", "operator", "/tasks/"),
        ("task", "operator", f"/tasks/{task_id}/"),
        ("dispatch", "operator", "/dispatch/"),
        ("dispatch-viewer", "viewer", "/dispatch/"),
        ("completions", "operator", "/completions/"),
        ("audit", "operator", "/audit/"),
        ("questions-empty", "operator", "/questions/"),
        ("not-found", "operator", "/tasks/no-such-task/"),
        ("login", "nobody", "/login/"),
        ("no-network", "loner", "/fleet/"),
    ]
    pages = {who: page_for(hub, user) for who, user in people.items()}
    problems: list[str] = []
    for page in pages.values():
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.on(
            "response",
            lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 and "no-such-task" not in r.url else 0,
        )
    for size, viewport in SIZES.items():
        for name, who, path in shots:
            page = pages[who]
            page.set_viewport_size(viewport)
            page.goto(path)
            page.wait_for_load_state("networkidle")
            if page.locator("#live").count():
                page.wait_for_selector("#live.on", timeout=5_000)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= viewport["width"], f"{name} at {size}: {width} px wide"
            shot = screenshot_dir / f"{name}-{size}.png"
            page.screenshot(path=shot, full_page=True)
            assert shot.stat().st_size > 5_000
    assert problems == []
    assert pages["viewer"].locator("main textarea, main form").count() == 0  # dispatch as a viewer: a note
