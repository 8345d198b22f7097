"""An operator's day in a real browser: log in, dispatch, watch agents work live, retry, and a viewer."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from hub_agents.services import membership_set

pytestmark = pytest.mark.django_db(transaction=True)
LIVE = 5_000  # ms: live updates land within a second; the margin is for a loaded CI machine


def mcp(hub: Any, caller: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    """An agent's tool call over MCP, as Claude Code or any SDK would send it."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    reply = httpx.post(f"{hub.url}/mcp", json=body, headers=caller.headers, timeout=30)
    outcome = json.loads(reply.json()["result"]["content"][0]["text"])
    assert outcome["ok"], outcome
    return outcome


@pytest.fixture
def people(network, django_user_model):
    operator = django_user_model.objects.create_user("ada", password="correct horse")
    viewer = django_user_model.objects.create_user("vic", password="battery staple")
    membership_set(user=operator, network=network, role="owner")
    membership_set(user=viewer, network=network, role="viewer")
    return operator, viewer


def test_operator_dispatches_watches_live_and_retries(hub_server, page_for, agent_http, people, screenshot_dir):
    hub = hub_server()
    operator, viewer = people
    for alias, status, task in [
        ("coder", "idle", None),
        ("reviewer", "working", "reading PR 12"),
        ("docs", "idle", None),
    ]:
        mcp(
            hub,
            agent_http,
            "report_status",
            resume_id=f"r-{alias}",
            alias=alias,
            status=status,
            task=task,
            model="model-x",
            agent="claude-code",
            hostname="build-01",
        )

    # Log in through the real form.
    desk = page_for(hub)
    desk.goto("/")
    desk.fill("input[name=username]", "ada")
    desk.fill("input[name=password]", "correct horse")
    desk.click("button:has-text('Log in')")
    desk.wait_for_url(f"{hub.url}/fleet/")
    assert desk.locator("article.agent").count() == 3

    # A second page watches the task list.
    watcher = page_for(hub, operator)
    watcher.goto("/tasks/")
    watcher.wait_for_selector("#live.on", timeout=LIVE)

    desk.goto("/dispatch/")
    desk.fill("input[name=alias]", "coder")
    desk.fill("textarea[name=task]", "Write the release notes")
    desk.select_option("select[name=priority]", "high")
    desk.click("button:has-text('Send task')")
    desk.wait_for_url("**/tasks/*/?sent=1")  # the task's page, with its "Task sent" banner
    task_id = desk.url.split("/tasks/", 1)[1].split("/", 1)[0]

    # It appears on the watching page without a reload, highlighted.
    row = watcher.locator(f"tr[data-key='{task_id}']")
    row.wait_for(timeout=LIVE)
    assert "flash" in (row.get_attribute("class") or "")

    # The agent works it over MCP while the operator watches the task page.
    watcher.goto(f"/tasks/{task_id}/")
    watcher.wait_for_selector("#live.on", timeout=LIVE)
    (message,) = mcp(hub, agent_http, "get_inbox", alias="coder")["messages"]
    mcp(hub, agent_http, "ack_inbox", alias="coder", message_id=message["id"])
    mcp(
        hub,
        agent_http,
        "report_status",
        resume_id="r-coder",
        alias="coder",
        status="working",
        task=task_id,
        progress=60,
    )
    watcher.wait_for_selector("h1 .pill:has-text('running')", timeout=LIVE)
    mcp(hub, agent_http, "report_completion", alias="coder", task=task_id, result="Notes written: 14 changes.", score=8)
    watcher.wait_for_selector("h1 .pill:has-text('replied')", timeout=LIVE)
    assert watcher.locator("text=Notes written: 14 changes.").first.is_visible()
    watcher.screenshot(path=screenshot_dir / "task.png", full_page=True)

    # A second task fails; the operator retries it from its page.
    desk.goto("/dispatch/")
    desk.fill("input[name=alias]", "coder")
    desk.fill("textarea[name=task]", "Publish the notes")
    desk.click("button:has-text('Send task')")
    desk.wait_for_url("**/tasks/*/?sent=1")  # the task's page, with its "Task sent" banner
    failing = desk.url.split("/tasks/", 1)[1].split("/", 1)[0]
    assert desk.locator("button[name=retry]").count() == 0
    mcp(
        hub,
        agent_http,
        "send_reply",
        alias="dashboard:ada",
        text="registry is down",
        in_reply_to=failing,
        status="failed",
    )
    desk.wait_for_selector("h1 .pill:has-text('failed')", timeout=LIVE)
    desk.click("button[name=retry]")
    desk.wait_for_selector("h1 .pill:has-text('delivered')", timeout=LIVE)
    assert desk.locator(".timeline li").count() == 3  # delivered, failed, delivered again

    desk.goto("/fleet/")
    desk.screenshot(path=screenshot_dir / "fleet.png", full_page=True)
    desk.goto("/tasks/")
    desk.screenshot(path=screenshot_dir / "tasks.png", full_page=True)
    desk.goto("/completions/")
    desk.screenshot(path=screenshot_dir / "completions.png", full_page=True)
    desk.set_viewport_size({"width": 390, "height": 844})  # a phone: still one readable column
    desk.goto("/fleet/")
    assert desk.evaluate("document.documentElement.scrollWidth") <= 390
    desk.screenshot(path=screenshot_dir / "fleet-narrow.png", full_page=True)
    desk.goto(f"/tasks/{task_id}/")
    assert desk.evaluate("document.documentElement.scrollWidth") <= 390
    desk.screenshot(path=screenshot_dir / "task-narrow.png", full_page=True)

    # A viewer sees the same task with no buttons and no dispatch.
    reader = page_for(hub, viewer)
    reader.goto(f"/tasks/{failing}/")
    assert reader.locator("h1 .pill").inner_text() == "delivered"
    assert reader.locator(".actions button").count() == 0
    assert reader.locator("nav >> text=Dispatch").count() == 0
    for shot in ("task", "fleet", "tasks", "completions", "fleet-narrow", "task-narrow"):
        assert (screenshot_dir / f"{shot}.png").stat().st_size > 10_000
