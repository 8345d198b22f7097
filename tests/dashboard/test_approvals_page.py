"""Approvals in a real browser (issue 17): an agent's call that a rule holds appears live on the
approvals page and in the nav's count (on every page), an admin approves it and it runs, or rejects
it with a note and it never does; a rule made with the page's form holds the next call. Shots of
the page with a held call and with decided ones."""

from __future__ import annotations

from typing import Any

import pytest

from hub_agents.models import AuditEntry
from hub_approvals.models import Approval, ApprovalRule
from hub_tasks.models import InboxMessage, Task
from tests.helpers.dashboard import SIZES, page_errors
from tests.helpers.live import rest

pytestmark = pytest.mark.django_db(transaction=True)
LIVE = 5_000  # ms
OPERATOR_ROLE = "admin"  # the `operator` fixture's role in the network
BADGE = "[data-live=approvals_count]"


def online(hub: Any, agent: Any, *aliases: str) -> None:
    for alias in aliases:
        rest(hub, agent, "POST", "/sessions/report", json={"alias": alias, "resume_id": f"r-{alias}", "status": "idle"})


def test_an_admin_approves_a_held_broadcast_that_appears_live(
    hub_server, page_for, agent_http, operator, network, screenshot_dir
):
    ApprovalRule.objects.create(network=network, name="broadcasts need a yes", tool="broadcast")
    hub = hub_server()
    online(hub, agent_http, "coder-1", "coder-2")
    page, elsewhere = page_for(hub, operator), page_for(hub, operator)
    # Two lists the pages' errors are added to: their sum is taken at the end, not now (a copy).
    errors_here, errors_elsewhere = page_errors(page), page_errors(elsewhere)
    page.goto("/approvals/")
    elsewhere.goto("/fleet/")  # the nav's count follows on any page
    for each in (page, elsewhere):
        each.wait_for_selector("#live.on", timeout=LIVE)
        assert each.inner_text(BADGE).strip() == ""
    assert "No call waits for approval" in page.inner_text("[data-live=approvals]")

    held = agent_http.mcp(hub, "broadcast", message="Deploy 2.4 to production at 17:00")

    assert held["pending_approval"] is True
    page.wait_for_selector(f"li.approval[data-key='{held['approval_id']}']", timeout=LIVE)
    for each in (page, elsewhere):
        each.wait_for_selector(f"{BADGE}:has-text('1')", timeout=LIVE)
    assert "0 of 1" in page.inner_text(f"li.approval[data-key='{held['approval_id']}']")
    assert InboxMessage.objects.filter(type=InboxMessage.Type.BROADCAST).count() == 0
    shots = {"desktop": "approvals.png", "phone": "approvals-phone.png"}
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        page.screenshot(path=screenshot_dir / shots[size], full_page=True)
    page.set_viewport_size(SIZES["desktop"])

    page.click(f"li.approval[data-key='{held['approval_id']}'] button[value=approve]")

    page.wait_for_selector(".notice.success:has-text('Approved: the call ran.')", timeout=LIVE)
    assert page.inner_text(BADGE).strip() == ""
    elsewhere.wait_for_selector(f"{BADGE}:not(.on)", state="attached", timeout=LIVE)  # without a reload
    assert elsewhere.locator(BADGE).count() == 1 and elsewhere.inner_text(BADGE).strip() == ""
    assert InboxMessage.objects.filter(type=InboxMessage.Type.BROADCAST).count() == 2
    assert Approval.objects.get(pk=held["approval_id"]).status == "approved"
    assert "approved by user:ada" in page.inner_text("table.decided")
    assert errors_here + errors_elsewhere == []


def test_an_admin_rejects_a_held_task_with_a_note_and_it_never_runs(
    hub_server, page_for, agent_http, operator, network, screenshot_dir
):
    ApprovalRule.objects.create(network=network, name="production deploys", tool="send_task", target_alias="deployer")
    hub = hub_server()
    page = page_for(hub, operator)
    problems = page_errors(page)
    page.goto("/approvals/")
    page.wait_for_selector("#live.on", timeout=LIVE)

    held = agent_http.mcp(hub, "send_task", alias="deployer", task="Drop the staging database", from_session="lead")
    page.wait_for_selector(f"li.approval[data-key='{held['approval_id']}']", timeout=LIVE)
    page.fill(f"li.approval[data-key='{held['approval_id']}'] input[name=note]", "not during the freeze")
    page.press(f"li.approval[data-key='{held['approval_id']}'] input[name=note]", "Enter")  # Enter rejects

    page.wait_for_selector(".notice.success:has-text('Rejected')", timeout=LIVE)
    assert "not during the freeze" in page.inner_text("table.decided")
    approval = Approval.objects.get(pk=held["approval_id"])
    assert approval.status == "rejected" and approval.reason.endswith("not during the freeze")
    assert not Task.objects.filter(content="Drop the staging database").exists()
    (notice,) = rest(hub, agent_http, "GET", "/sessions/lead/inbox")["messages"]
    assert "not during the freeze" in notice["content"]
    page.screenshot(path=screenshot_dir / "approvals-decided.png", full_page=True)
    assert problems == []


def test_a_rule_made_with_the_form_holds_the_next_call(
    hub_server, page_for, agent_http, operator, network, screenshot_dir
):
    hub = hub_server()
    page = page_for(hub, operator)
    problems = page_errors(page)
    page.goto("/approvals/")
    assert "No rules" in page.inner_text("#rules")
    assert message_of(agent_http.mcp(hub, "send_message", alias="prod-db", message="vacuum now")) == "ran"

    page.fill("#rules input[name=name]", "prod-db is precious")
    page.select_option("#rules select[name=tool]", "send_message")
    page.fill("#rules input[name=target_alias]", "prod-db")
    page.select_option("#rules select[name=tier]", "2")
    page.fill("#rules input[name=timeout_seconds]", "600")
    page.screenshot(path=screenshot_dir / "approvals-rule-form.png", full_page=True)
    page.click("#rules button[name=save]")

    page.wait_for_selector(".notice.success:has-text('prod-db is precious')", timeout=LIVE)
    assert "prod-db is precious" in page.inner_text("table.rules")
    held = agent_http.mcp(hub, "send_message", alias="prod-db", message="vacuum again")
    assert message_of(held) == "held" and held["approvals_required"] == 2
    rule = ApprovalRule.objects.get(network=network)
    assert (rule.tool, rule.target_alias, rule.timeout_seconds, rule.created_by) == (
        "send_message", "prod-db", 600, "user:ada",
    )  # fmt: skip
    assert AuditEntry.objects.filter(action="approval.rule_changed", actor="user:ada").count() == 1
    assert problems == []


def message_of(answer: dict[str, Any]) -> str:
    assert answer["ok"] is True, answer
    return "held" if answer.get("pending_approval") else "ran"
