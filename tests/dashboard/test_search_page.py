"""Search in a real browser (issue 18): the nav's search box on any page leads to the results of
the operator's network, best first, matches highlighted (and the texts' own markup shown as text).
Shots of the results page on a desktop and on a phone."""

from __future__ import annotations

import pytest

from tests.helpers.dashboard import SIZES, page_errors

pytestmark = pytest.mark.django_db(transaction=True)
OPERATOR_ROLE = "viewer"  # the `operator` fixture's role in the network


def test_the_nav_box_finds_tasks_messages_completions_and_posts_highlighted(
    hub_server, page_for, agent_http, operator, screenshot_dir
):
    hub = hub_server()
    task = agent_http.mcp(
        hub, "send_task", alias="coder", task="Deploy the <b>parser</b> to staging", from_session="lead"
    )
    agent_http.mcp(hub, "send_message", alias="coder", message="staging deploy is blocked by the migration")
    agent_http.mcp(hub, "report_completion", alias="coder", task="Write the docs", result="deployed to staging")
    agent_http.mcp(hub, "send_task", alias="coder", task="unrelated work", from_session="lead")
    ops = agent_http.mcp(hub, "channel_create", name="ops", alias="lead", members=["coder"])["channel_id"]
    agent_http.mcp(hub, "channel_post", channel_id=ops, alias="coder", content="staging: deploy window at 5")
    page = page_for(hub, operator)
    problems = page_errors(page)
    page.goto("/fleet/")

    page.fill("form.navsearch input[name=q]", "deploy staging")
    page.press("form.navsearch input[name=q]", "Enter")

    page.wait_for_selector("table.search-results")
    assert page.url.endswith("/search/?q=deploy+staging")
    rows = page.locator("table.search-results tbody tr")
    assert rows.count() == 3  # the task, the message, the post; the completion says "deployed", not "deploy"
    kinds = sorted(rows.nth(i).get_attribute("data-key").split("-", 1)[0] for i in range(rows.count()))
    assert kinds == ["message", "post", "task"]
    marked = page.locator(f"tr[data-key='task-{task['task_id']}'] .snippet mark")
    assert [marked.nth(i).inner_text() for i in range(marked.count())] == ["Deploy", "staging"]
    assert "<b>parser</b>" in page.inner_text(f"tr[data-key='task-{task['task_id']}'] .snippet")  # text, not markup
    assert page.locator(".snippet b").count() == 0

    page.click(f"tr[data-key='post-{ops}#1'] a")  # a post leads to its place in its channel
    page.wait_for_selector("#post-1")
    assert page.url.endswith(f"/channels/{ops}/#post-1")
    assert "staging: deploy window at 5" in page.inner_text("#post-1")
    page.go_back()

    page.fill(".search-form input[name=q]", "deploy* staging")
    page.select_option(".search-form select[name=kind]", "completion")
    page.click(".search-form button")
    page.wait_for_selector("table.search-results tbody tr[data-key^=completion]")
    assert page.locator("table.search-results tbody tr").count() == 1

    page.goto("/search/?q=deploy+staging")
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        page.screenshot(
            path=screenshot_dir / ("search.png" if size == "desktop" else "search-phone.png"), full_page=True
        )
    assert problems == []
