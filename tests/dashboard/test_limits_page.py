"""The Limits page ("Caps and budgets", issue 28) in a real browser: an owner sets concurrency caps
with the page's form, sees a cap's slots fill and its waiting task appear live as tasks are sent,
and deletes it, which delivers the task that waited. It fits a phone (390 px) and 1280 px without
sideways scrolling. Shot into tests/dashboard/screenshots/ (limits-*.png)."""

from __future__ import annotations

import pytest

from hub_tasks.models import Cap, Task, TaskStatus
from tests.helpers.dashboard import fits

pytestmark = pytest.mark.django_db(transaction=True)
LIVE = 5_000  # ms, as the other live pages' tests wait
SIZES = {"phone": {"width": 390, "height": 844}, "wide": {"width": 1280, "height": 800}}


def set_cap(page, scope: str, limit: int, value: str = "") -> None:
    page.select_option("select[name=scope]", scope)
    page.fill("input[name=value]", value)
    page.fill("input[name=limit]", str(limit))
    page.click("button[name=set_cap]")
    page.wait_for_selector(".notice.success:has-text('Cap set')")


@pytest.mark.parametrize("size", SIZES)
def test_an_owner_sets_a_cap_watches_its_slots_and_deletes_it(
    hub_server, page_for, agent_http, operator, screenshot_dir, size
):
    hub = hub_server()
    page = page_for(hub, operator)
    page.set_viewport_size(SIZES[size])
    width = SIZES[size]["width"]
    page.goto("/nodes/")
    page.click("a:has-text('Caps and budgets')")
    page.wait_for_selector("#live.on", timeout=LIVE)
    assert "No caps" in page.inner_text("#caps")

    set_cap(page, "skill", 2, value="gpu-inference-with-a-rather-long-skill-name")
    set_cap(page, "all", 1)
    cap = Cap.objects.get(scope="all")
    row = f"tr#cap-{cap.pk}"
    assert "0 of 1" in page.inner_text(row)
    page.wait_for_selector("#live.on", timeout=LIVE)

    # Two tasks sent over REST: the first takes the only slot, the second waits; the table shows
    # both without a reload.
    first = agent_http.send_task(hub, "builder", "port the parser")["task_id"]
    second = agent_http.send_task(hub, "builder", "port the lexer")["task_id"]
    page.wait_for_selector(f"{row} .waiting:has-text('1 task')", timeout=LIVE)
    assert "1 of 1" in page.inner_text(row) and "full" in page.inner_text(row)
    assert Task.objects.get(pk=second).waiting_cap == cap.pk
    fits(page, width, "/limits/")
    shot = screenshot_dir / f"limits-{size}.png"
    page.screenshot(path=shot, full_page=True)
    assert shot.stat().st_size > 5_000

    page.click(f"{row} button:has-text('Delete')")
    page.wait_for_selector(".notice.success:has-text('Cap deleted')")
    assert page.locator(row).count() == 0 and page.locator("#caps tbody tr").count() == 1
    assert Task.objects.get(pk=first).status == TaskStatus.DELIVERED
    assert Task.objects.get(pk=second).status == TaskStatus.DELIVERED
    fits(page, width, "/limits/ (deleted)")
