"""Budgets on the Limits page ("Caps and budgets", issue 28) in a real browser: an owner sets the
network's budget with the page's form; usage reported as a node reports it (report_completion over
MCP, with the run's tokens and cost) takes it to warned (80 %) and then reached, which the page shows
without a reload; a task sent then waits for it, and raising the budget with the form delivers it.
The Nodes and fleet pages show the network's strip and the agent's own budget, kept live. Every page fits a
phone (390 px) and 1280 px without sideways scrolling. Shot into tests/dashboard/screenshots/
(budgets-*.png)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from hub_tasks.models import Budget, Task, TaskStatus
from tests.helpers.dashboard import fits
from tests.helpers.live import mcp_ok

pytestmark = pytest.mark.django_db(transaction=True)
LIVE = 5_000  # ms, as the other live pages' tests wait
SIZES = {"phone": {"width": 390, "height": 844}, "wide": {"width": 1280, "height": 800}}
AGENT = "builder-with-a-longer-alias"


def rest(hub: Any, agent: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = httpx.post(f"{hub.url}/api/v1/{path}", json=body, headers=agent.headers, timeout=30)
    assert reply.status_code in (200, 201), reply.text
    return reply.json()


def set_budget(page, *, usd: str, tokens: str = "", alias: str = "", period: str = "day") -> None:
    page.fill("input[name=alias]", alias)
    page.select_option("select[name=period]", period)
    page.fill("input[name=limit_usd]", usd)
    page.fill("input[name=limit_tokens]", tokens)
    page.select_option("select[name=on_limit]", "hold")
    page.click("button[name=set_budget]")
    page.wait_for_selector(".notice.success:has-text('Budget set')")


def run(hub: Any, agent: Any, task: str, *, usd: float, tokens: int) -> str:
    """A task to the agent, and its run's end as commhub-agent node reports it: report_completion
    with the task's id and the run's usage."""
    task_id = rest(hub, agent, "tasks", {"alias": AGENT, "task": task, "from_session": "lead"})["task_id"]
    mcp_ok(
        hub, agent, "report_completion", alias=AGENT, task=task_id, result=f"{task}: done",
        tokens_in=tokens, tokens_out=tokens // 10, cost_usd=usd, model="claude-sonnet",
    )  # fmt: skip
    return task_id


@pytest.mark.parametrize("size", SIZES)
def test_an_owner_sets_a_budget_watches_it_fill_and_raises_it(
    hub_server, page_for, agent_http, operator, screenshot_dir, size
):
    hub = hub_server()
    rest(hub, agent_http, "nodes/report", {
        "node_id": "box-1", "node_name": "gpu-build-box-1", "slots_total": 2, "slots_used": 0,
        "agents": [{"alias": AGENT, "runtime": "claude", "concurrency": 2, "running": 0}],
    })  # fmt: skip
    rest(hub, agent_http, "sessions/report", {"alias": AGENT, "status": "idle", "resume_id": "r-b", "node_id": "box-1"})
    page = page_for(hub, operator)
    page.set_viewport_size(SIZES[size])
    width = SIZES[size]["width"]
    page.goto("/limits/")
    page.wait_for_selector("#live.on", timeout=LIVE)
    assert "No budgets" in page.inner_text("#budgets")

    set_budget(page, usd="100000", tokens="50000", alias=AGENT)  # the agent's own: stays ok
    set_budget(page, usd="1")  # the network's: $1.00 a day
    budget = Budget.objects.get(alias="")
    card = f"#budget-{budget.pk}"
    assert "$0.00 of $1.00" in page.inner_text(card) and "ok" in page.inner_text(f"{card} .state")
    page.wait_for_selector("#live.on", timeout=LIVE)

    # Usage reported: 85 % of the day's dollars; the card turns warned without a reload.
    run(hub, agent_http, "port the parser", usd=0.85, tokens=12_000)
    page.wait_for_selector(f"{card} .state:has-text('warned')", timeout=LIVE)
    assert "$0.85 of $1.00" in page.inner_text(card) and "85.0 %" in page.inner_text(card)
    # And past it: reached.
    run(hub, agent_http, "port the lexer", usd=0.25, tokens=3_000)
    page.wait_for_selector(f"{card} .state:has-text('reached')", timeout=LIVE)
    assert "$1.10 of $1.00" in page.inner_text(card)

    # A task sent now waits for the budget. Held at its send, it publishes nothing: the page shows
    # its waiter when read again.
    held = rest(hub, agent_http, "tasks", {"alias": AGENT, "task": "port the printer", "from_session": "lead"})
    assert Task.objects.get(pk=held["task_id"]).waiting_budget == budget.pk
    page.reload()
    page.wait_for_selector(f"{card} .waiting:has-text('1 task waiting')")
    fits(page, width, "/limits/")
    shot = screenshot_dir / f"budgets-{size}.png"
    page.locator("#budgets").scroll_into_view_if_needed()
    page.screenshot(path=shot, full_page=True)
    assert shot.stat().st_size > 5_000

    # The owner raises it with the form: the waiting task is delivered at once.
    set_budget(page, usd="5")
    assert "$1.10 of $5.00" in page.inner_text(card) and "ok" in page.inner_text(f"{card} .state")
    assert "No task waiting" in page.inner_text(card)
    task = Task.objects.get(pk=held["task_id"])
    assert (task.status, task.waiting_budget) == (TaskStatus.DELIVERED, None)
    fits(page, width, "/limits/ (raised)")

    # The Nodes and fleet pages: the network's strip, linking here, and the agent's own meter.
    mine = Budget.objects.get(alias=AGENT).pk
    for path in ("/nodes/", "/fleet/?view=table", "/fleet/"):
        page.goto(path)
        strip = page.locator("a.budget-strip")
        assert "$1.10 of $5.00" in strip.inner_text() and "22 %" in strip.inner_text()
        assert page.locator(f"[data-budget='{mine}']").count() == 1
        fits(page, width, path)
        name = path.strip("/").replace("/?view=", "-")
        page.screenshot(path=screenshot_dir / f"budgets-{name}-{size}.png", full_page=True)
    # On the fleet page, a run's usage moves the strip and the agent's meter without a reload.
    page.wait_for_selector("#live.on", timeout=LIVE)
    run(hub, agent_http, "port the checker", usd=0.4, tokens=20_000)
    page.wait_for_selector("a.budget-strip:has-text('$1.50 of $5.00')", timeout=LIVE)
    page.wait_for_selector(f"[data-budget='{mine}'] .pct:has-text('77 %')", timeout=LIVE)
    page.click("a.budget-strip")
    page.wait_for_selector(f"{card}")
    assert page.url.endswith("/limits/#budgets")
