"""The fleet page's skills and open pool in a real browser (issue 17): the skill filter narrows the
cards and the pool, an open task appears in the pool column live when it is posted and leaves it
when an agent claims it; shots of both at desktop and phone size."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.helpers.dashboard import SIZES, page_errors

pytestmark = pytest.mark.django_db(transaction=True)
LIVE = 5_000  # ms


def rest(hub: Any, agent: Any, method: str, path: str, **body: Any) -> dict[str, Any]:
    reply = httpx.request(method, f"{hub.url}/api/v1/{path}", json=body, headers=agent.headers, timeout=30)
    assert reply.status_code in (200, 201), reply.text
    return reply.json()


def test_the_pool_column_follows_posts_and_claims_and_skills_filter_the_fleet(
    hub_server, page_for, agent_http, operator, screenshot_dir
):
    hub = hub_server()
    for alias, skills in [("coder", ["python", "review"]), ("gopher", ["go"]), ("writer", ["docs"])]:
        rest(hub, agent_http, "POST", "sessions/report", alias=alias, status="idle", resume_id=f"r-{alias}",
             skills=skills, max_concurrent=2)  # fmt: skip
    rest(hub, agent_http, "POST", "tasks", alias="pool", task="Document the pool API", required_skills=["docs"])
    page = page_for(hub, operator)
    problems = page_errors(page)
    page.goto("/fleet/")
    page.wait_for_selector("#live.on", timeout=LIVE)
    assert page.locator("aside[data-live=pool] li").count() == 1

    posted = rest(hub, agent_http, "POST", "tasks", alias="pool", task="Review the claim race",
                  required_skills=["python", "review"], priority="high")  # fmt: skip
    page.wait_for_selector(f"aside[data-live=pool] li[data-key='{posted['task_id']}']", timeout=LIVE)
    assert page.locator("aside[data-live=pool] li").first.get_attribute("data-key") == posted["task_id"]  # high first

    page.click("nav.skills a.tag:has-text('go')")
    page.wait_for_selector("article[data-alias=gopher]")
    assert page.locator("article.agent").count() == 1
    assert "No open tasks needing go" in page.inner_text("aside[data-live=pool]")
    page.click("nav.skills a.tag:has-text('every skill')")
    page.wait_for_selector("article[data-alias=coder]")

    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        page.screenshot(path=screenshot_dir / f"fleet-pool-{size}.png", full_page=True)

    claimed = rest(hub, agent_http, "POST", f"tasks/{posted['task_id']}/claim", alias="coder")
    assert claimed["claimed_by"] == "coder"
    page.wait_for_selector(f"aside[data-live=pool] li[data-key='{posted['task_id']}']", state="detached", timeout=LIVE)
    assert page.locator("aside[data-live=pool] li").count() == 1
    assert problems == []
