"""The schedules page in a real browser (issue 28): an owner creates a schedule with the page's
form, runs it now and pauses it; the list, its runs and the form fit a phone (390 px) and 1280 px
without sideways scrolling. Shot into tests/dashboard/screenshots/ (schedules-*.png)."""

from __future__ import annotations

import pytest

from hub_schedules.models import Schedule, ScheduleRun

pytestmark = pytest.mark.django_db(transaction=True)
SIZES = {"phone": {"width": 390, "height": 844}, "wide": {"width": 1280, "height": 800}}


def fits(page, width: int, where: str) -> None:
    outside = page.evaluate(
        f"[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > {width + 1})"
        ".map(e => e.tagName + '.' + e.className + ' ' + (e.innerText || '').slice(0, 40))"
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= width, f"{where} scrolls sideways: {outside}"


@pytest.mark.parametrize("size", SIZES)
def test_an_owner_creates_runs_and_pauses_a_schedule(hub_server, page_for, network, operator, screenshot_dir, size):
    hub = hub_server()
    page = page_for(hub, operator)
    page.set_viewport_size(SIZES[size])
    width = SIZES[size]["width"]

    page.goto("/schedules/")
    assert "No schedules yet" in page.inner_text("main")
    page.fill("input[name=name]", "nightly-dependency-review")
    page.fill("textarea[name=task]", "Review last night's dependency updates and open a pull request for each.")
    page.fill("input[name=alias]", "reviewer-agent-with-a-long-name")
    page.fill("input[name=cron]", "0 2 * * 1-5")
    page.fill("input[name=time_zone]", "Europe/Berlin")
    page.click("button[name=create]")
    page.wait_for_selector(".notice.success")
    schedule = Schedule.objects.get()
    row = f"tr[data-schedule='{schedule.pk}']"
    assert "0 2 * * 1-5" in page.inner_text(row) and "Europe/Berlin" in page.inner_text(row)

    page.click(f"{row} button:has-text('Run now')")
    page.wait_for_selector(f"{row} .pill:has-text('sent')")
    assert ScheduleRun.objects.get(schedule=schedule).task.to_name == "reviewer-agent-with-a-long-name"
    fits(page, width, "/schedules/")
    page.screenshot(path=screenshot_dir / f"schedules-{size}.png", full_page=True)

    page.click(f"{row} button:has-text('Pause')")
    page.wait_for_selector(f"{row} button:has-text('Resume')")
    assert Schedule.objects.get().paused is True
    fits(page, width, "/schedules/ (paused)")
