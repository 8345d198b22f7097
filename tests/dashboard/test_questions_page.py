"""Questions to a person in a real browser (issue 17): a question an agent asks appears live on the
questions page with the nav's count, an operator answers with an option's button or in words, on
the questions page or the task's page, and the answer lands in the agent's inbox; shots of both."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.dashboard import SIZES, page_errors
from tests.helpers.live import rest

pytestmark = pytest.mark.django_db(transaction=True)
LIVE = 5_000  # ms


def running_task(hub: Any, agent: Any, alias: str, text: str) -> str:
    task_id = rest(hub, agent, "POST", "/tasks", json={"alias": alias, "task": text, "from_session": "lead"})["task_id"]
    rest(hub, agent, "POST", "/sessions/report", json={"alias": alias, "resume_id": f"r-{alias}", "status": "working",
                                                       "task": task_id})  # fmt: skip
    return task_id


def replies(hub: Any, agent: Any, alias: str) -> list[str]:
    inbox = rest(hub, agent, "GET", f"/sessions/{alias}/inbox")["messages"]
    return [m["content"] for m in inbox if m["type"] == "reply"]


def test_an_operator_answers_questions_live_by_button_and_in_words(
    hub_server, page_for, agent_http, operator, screenshot_dir
):
    hub = hub_server()
    migrate = running_task(hub, agent_http, "coder", "Migrate the orders table")
    deploy = running_task(hub, agent_http, "deployer", "Deploy 2.4 to production")
    page = page_for(hub, operator)
    problems = page_errors(page)
    page.goto("/questions/")
    page.wait_for_selector("#live.on", timeout=LIVE)
    assert "No questions" in page.inner_text("[data-live=questions]")

    asked = agent_http.mcp(hub, "ask_operator", task_id=migrate, question="Drop the old table now?",
                           options=["yes", "no, keep it a week"])  # fmt: skip
    agent_http.mcp(hub, "ask_operator", task_id=deploy, question="Which maintenance window?")
    page.wait_for_selector(f"li.question[data-key='{asked['question_id']}']", timeout=LIVE)
    page.wait_for_selector("[data-live=questions_count]:has-text('2')", timeout=LIVE)
    rest(hub, agent_http, "POST", "/sessions/report", json={"alias": "coder", "resume_id": "r-coder",
                                                            "status": "waiting_input", "task": migrate})  # fmt: skip
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        page.screenshot(path=screenshot_dir / f"questions-{size}.png", full_page=True)
    page.set_viewport_size(SIZES["desktop"])

    page.click(f"li.question[data-key='{asked['question_id']}'] button.option:has-text('no, keep it a week')")
    page.wait_for_selector(".notice.success", timeout=LIVE)
    assert replies(hub, agent_http, "coder") == ["no, keep it a week"]
    page.wait_for_selector("[data-live=questions_count]:has-text('1')", timeout=LIVE)

    page.goto("/fleet/")  # the waiting agent's card links to its question
    page.click("article[data-alias=deployer] .asks a")
    page.wait_for_url(f"**/tasks/{deploy}/")
    assert page.locator("h1 .pill:has-text('waiting for input')").count() == 1
    page.fill("form.free input[name=answer]", "Sunday 02:00 UTC")
    page.press("form.free input[name=answer]", "Enter")
    page.wait_for_selector("p.answer:has-text('Sunday 02:00 UTC')", timeout=LIVE)
    assert replies(hub, agent_http, "deployer") == ["Sunday 02:00 UTC"]
    assert page.inner_text("[data-live=questions_count]").strip() == ""
    assert page.locator("h1 .pill:has-text('waiting for input')").count() == 0
    page.screenshot(path=screenshot_dir / "task-question-desktop.png", full_page=True)
    assert problems == []
