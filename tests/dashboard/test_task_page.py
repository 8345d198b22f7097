"""The task page and what surrounds it, in a real browser: attempts kept across retries, forms that
cannot misfire, plain-language errors, names and links instead of ids, one time format, the chart."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.helpers.live import mcp_ok

pytestmark = pytest.mark.django_db(transaction=True)
LIVE = 5_000  # ms: live updates land within a second; the margin is for a loaded machine
WIDE, NARROW = {"width": 1280, "height": 800}, {"width": 390, "height": 844}


def shoot(page: Any, directory: Any, name: str) -> None:
    """The page at desktop and phone width, full length, for a person to look at."""
    for size, suffix in ((WIDE, "wide"), (NARROW, "narrow")):
        page.set_viewport_size(size)
        page.screenshot(path=directory / f"content-{name}-{suffix}.png", full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") <= size["width"], f"{name} scrolls sideways"
    page.set_viewport_size(WIDE)


def test_attempts_forms_and_banner_on_the_task_page(hub_server, page_for, agent_http, operator, screenshot_dir):
    hub = hub_server()
    for alias in ("coder", "helper"):
        mcp_ok(hub, agent_http, "report_status", resume_id=f"r-{alias}", alias=alias, status="idle")
    page = page_for(hub, operator)
    page.set_viewport_size(WIDE)

    # A refused dispatch says what to fix, in an operator's words, next to the field.
    page.goto("/dispatch/")
    page.fill("input[name=alias]", "coder")
    page.fill("textarea[name=task]", "Publish the notes")
    page.fill("input[name=ttl_seconds]", "two days")
    page.click("button:has-text('Send task')")
    error = page.locator("#error-ttl_seconds")
    assert error.inner_text().startswith("Enter the time to live as a whole number of seconds")
    assert "Fix the argument" not in page.content()
    shoot(page, screenshot_dir, "dispatch-error")

    page.fill("input[name=ttl_seconds]", "")
    page.click("button:has-text('Send task')")
    page.wait_for_url("**/tasks/*/?sent=1")
    task_id = page.url.split("/tasks/", 1)[1].split("/", 1)[0]
    page.wait_for_selector("#live.on", timeout=LIVE)
    assert page.locator(".notice.sent").inner_text().startswith("Task sent to coder: now delivered")

    # The agent fails it (no from_session, as agents often send): the banner goes, live.
    mcp_ok(hub, agent_http, "send_reply", alias="dashboard:ada", text="registry is down (503)", in_reply_to=task_id,
        status="failed")  # fmt: skip
    page.wait_for_selector("h1 .pill:has-text('failed')", timeout=LIVE)
    assert page.locator(".notice.sent").count() == 0

    # Retry keeps the failure as Attempt 1; two more runs make three attempts.
    page.click("button[name=retry]")
    page.wait_for_selector("h1 .pill:has-text('delivered')", timeout=LIVE)
    mcp_ok(hub, agent_http, "send_reply", alias="dashboard:ada", text="disk full", in_reply_to=task_id, status="failed")
    page.wait_for_selector("h1 .pill:has-text('failed')", timeout=LIVE)
    page.click("button[name=retry]")
    page.wait_for_selector("h1 .pill:has-text('delivered')", timeout=LIVE)
    mcp_ok(hub, agent_http, "send_reply", alias="dashboard:ada", text="Published: 14 changes.", in_reply_to=task_id)
    page.wait_for_selector("h1 .pill:has-text('replied')", timeout=LIVE)
    attempts = page.locator("li.attempt")
    assert attempts.count() == 3
    expected = {"Attempt 3": "Published: 14 changes.", "Attempt 2": "disk full", "Attempt 1": "registry is down (503)"}
    for n, (title, result) in enumerate(expected.items()):
        card = attempts.nth(n)
        assert card.locator("b").inner_text() == title
        assert card.locator("pre").inner_text() == result
        assert "by coder" in card.inner_text()
    assert "reply from hub" not in page.locator(".timeline").inner_text()
    when = page.locator(".record time").first
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", when.get_attribute("title"))
    assert when.inner_text() in ("just now",) or when.inner_text().endswith(" ago")
    assert page.locator("dt:has-text('Queued for')").count() == 1
    shoot(page, screenshot_dir, "task-attempts")

    # Reassign cannot go to an agent nobody chose; cancel asks first and keeps the reason.
    mcp_ok(hub, agent_http, "send_task", alias="coder", task="Port the lexer", from_session="lead")
    second = mcp_ok(hub, agent_http, "list_tasks", alias="coder", status="delivered")["tasks"][0]["task_id"]
    page.goto(f"/tasks/{second}/")
    page.wait_for_selector("#live.on", timeout=LIVE)
    menu = page.locator("select[name=new_alias]")
    assert menu.input_value() == "" and menu.locator("option:checked").inner_text() == "choose an agent"
    page.click("button[name=reassign]")  # the browser refuses the empty required choice: nothing is sent
    assert page.url.endswith(f"/tasks/{second}/") and page.locator(".notice").count() == 0
    assert page.locator("button[name=cancel]").is_visible() is False  # hidden until asked for
    page.click("summary:has-text('Cancel task…')")
    page.fill("input[name=reason]", "superseded by the new parser")
    shoot(page, screenshot_dir, "task-cancel-confirm")
    page.click("button:has-text('Confirm cancel')")
    page.wait_for_selector("h1 .pill:has-text('cancelled')", timeout=LIVE)
    assert "superseded by the new parser" in page.locator(".timeline").inner_text()


def test_completions_and_fleet_name_and_link_tasks(hub_server, page_for, agent_http, operator, screenshot_dir):
    hub = hub_server()
    task_id = mcp_ok(hub, agent_http, "send_task", alias="coder", task="Measure the parser", from_session="lead")[
        "task_id"
    ]
    mcp_ok(hub, agent_http, "report_status", resume_id="r-coder", alias="coder", status="working", task=task_id)
    page = page_for(hub, operator)
    page.set_viewport_size(WIDE)

    page.goto("/fleet/")
    card = page.locator("article.agent", has_text="coder")
    assert card.locator(f"a[href='/tasks/{task_id}/']").inner_text() == "Measure the parser"
    assert task_id not in card.inner_text()

    mcp_ok(hub, agent_http, "report_completion", alias="coder", task=task_id, result="All green.", score=9)
    page.goto("/completions/")
    row = page.locator("table.completions tbody tr").first
    assert row.locator(f"a[href='/tasks/{task_id}/']").inner_text() == "Measure the parser"
    assert row.locator("a[href='/tasks/?alias=coder']").inner_text() == "coder"
    assert task_id not in row.inner_text()
    assert row.locator("td.when time").get_attribute("title").endswith(" UTC")
    box = row.locator("td.when").bounding_box()
    assert box is not None and box["height"] < 50  # one line, not a wrapped ISO timestamp
    ticks = page.locator("svg.chart text.tick").all_text_contents()
    assert ticks == ["0", "1", "2", "3", "4"]
    assert page.locator("svg.chart text.zone").text_content() == "hour (UTC)"
    shoot(page, screenshot_dir, "completions")

    page.click(f"a[href='/tasks/{task_id}/']")
    page.wait_for_url(f"**/tasks/{task_id}/")
    page.click("dd a:has-text('coder')")
    page.wait_for_url("**/tasks/?alias=coder")
    assert page.locator(f"tr[data-key='{task_id}']").count() == 1
