"""The dashboard at 1280 px with a real fleet (issue 24 item 12): the top bar on one row with every
link, badge and a long name in it; the fleet table across the page's width rather than beside a wide
empty pool panel; the completions' agent column never breaking an alias. Measured in Chromium, and
shot into tests/dashboard/screenshots/ (wide-*.png) for people to look at."""

from __future__ import annotations

from typing import Any

import pytest

from hub_agents.services import membership_set
from hub_approvals.models import ApprovalRule
from tests.helpers.live import mcp_ok

pytestmark = pytest.mark.django_db(transaction=True)
WIDE = {"width": 1280, "height": 800}
STATUSES = ["working", "idle", "working", "blocked", "working", "error", "waiting_input", "idle", "working"]
TRACEBACK = 'Traceback (most recent call last):\n  File "/srv/app/db.py", line 12, in connect\n' + (
    'psycopg.OperationalError: connection to server at "db.internal" (10.0.0.5), port 5432 failed: Connection refused'
)
LONG_TASK = (
    "Port the ingestion pipeline's retry logic to the new queue client, keep the dead-letter semantics, "
    "and add a regression test for the duplicate-delivery case reported in production last week"
)


def seed(hub: Any, caller: Any) -> None:
    """36 agents agent-01 … agent-36 in every state, running long tasks, and a day of completions."""
    for n in range(1, 37):
        alias = f"agent-{n:02d}"
        status = STATUSES[n % len(STATUSES)]
        mcp_ok(hub, caller, "report_status", alias=alias, resume_id=f"r-{alias}", status=status,
               hostname=f"build-{n % 4:02d}", model="claude-sonnet-4-5", agent="claude-code",
               task=LONG_TASK if status == "working" else None, output=TRACEBACK if status == "error" else None,
               progress=40 if status == "working" else None)  # fmt: skip
    for n in range(1, 13):
        alias = f"agent-{n:02d}"
        task_id = mcp_ok(hub, caller, "send_task", alias=alias, task=f"{LONG_TASK} (part {n})", from_session="lead")[
            "task_id"
        ]
        mcp_ok(hub, caller, "ack_inbox", alias=alias, message_id=task_id)
        if n <= 2:
            mcp_ok(hub, caller, "ask_operator", task_id=task_id, question="Keep the old client for one more release?")
        else:
            mcp_ok(
                hub,
                caller,
                "report_completion",
                alias=alias,
                task=task_id,
                score=8,
                result="Done: retries ported, dead letters kept, regression test added and green on CI.",
            )


def shoot(page: Any, path: str, name: str, screenshot_dir: Any) -> None:
    page.goto(path)
    page.wait_for_selector("#live.on", timeout=5_000)
    page.screenshot(path=screenshot_dir / f"wide-{name}.png", full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDE["width"], f"{path} scrolls sideways"


def rows_of_topbar(page: Any) -> int:
    """How many rows the top bar's items sit on (items whose tops differ by more than half a row)."""
    tops = page.evaluate(
        """() => [...document.querySelectorAll('.topbar > *, .topbar nav > a, .topbar .right > *')]
                 .map(e => e.getBoundingClientRect()).map(r => r.top + r.height / 2)"""
    )
    rows: list[float] = []
    for middle in sorted(tops):
        if not rows or middle - rows[-1] > 14:
            rows.append(middle)
    return len(rows)


def test_the_pages_fit_1280_px(hub_server, page_for, agent_http, network, django_user_model, screenshot_dir):
    network.name = "production-fleet"
    network.save(update_fields=["name"])
    person = django_user_model.objects.create_user("operator.on.call", password="unused")
    membership_set(user=person, network=network, role="owner")  # every link: audit and webhooks too
    ApprovalRule.objects.create(network=network, name="broadcasts need a yes", tool="broadcast")
    hub = hub_server()
    seed(hub, agent_http)
    assert mcp_ok(hub, agent_http, "broadcast", message="Deploy 2.4 at 17:00")["pending_approval"] is True
    page = page_for(hub, person)
    page.set_viewport_size(WIDE)

    shoot(page, "/fleet/?view=table", "fleet-table", screenshot_dir)
    # Both of the bar's badges are shown: 2 questions, 1 call held for approval.
    assert [page.inner_text(f"[data-live={name}_count]").strip() for name in ("questions", "approvals")] == ["2", "1"]
    assert rows_of_topbar(page) == 1, "the top bar wraps at 1280 px"
    # The table has the page's width: the empty pool is a line below it, not a column beside it.
    main = page.evaluate("(() => { const m = document.querySelector('main'); return m.clientWidth - 48; })()")
    table = page.locator("table.fleet-table").bounding_box()
    assert table["width"] >= main - 2, f"the fleet table is {table['width']} px of {main}"
    assert page.locator("aside[data-live=pool]").bounding_box()["y"] >= table["y"] + table["height"]
    assert "error" in page.locator("table.fleet-table tbody tr").first.inner_text()  # problems first

    mcp_ok(hub, agent_http, "send_task", alias="pool", task="Document the pool API", required_skills=["docs"])
    shoot(page, "/fleet/?view=table", "fleet-table-pool", screenshot_dir)
    assert page.locator("table.fleet-table").bounding_box()["width"] >= main - 2  # a pool with tasks: below too
    shoot(page, "/fleet/", "fleet-cards-pool", screenshot_dir)
    assert page.locator("aside[data-live=pool] li").count() == 1  # beside the cards, which reflow

    shoot(page, "/completions/", "completions", screenshot_dir)
    cells = page.locator("table.completions tbody td:first-child a")
    assert cells.count() == 10
    broken = page.evaluate(
        """() => [...document.querySelectorAll('table.completions tbody td:first-child a')]
                 .filter(a => a.getClientRects().length > 1).map(a => a.textContent)"""
    )
    assert broken == [], f"aliases broken across lines: {broken}"

    shoot(page, "/tasks/", "tasks", screenshot_dir)
    assert rows_of_topbar(page) == 1
