"""The approvals page (Django's test client): held calls listed with their votes, approved or
rejected by the network's owners and admins only, rules set on the page (audited, applied from the
next call), and the dashboard's own writes answered "held" when a rule holds them."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from hub_agents.models import ApiToken, AuditEntry
from hub_agents.services import token_create, token_revoke
from hub_approvals.models import Approval, ApprovalRule, ApprovalVote
from hub_tasks.models import Task
from tests.helpers.calls import broadcast, cancel_task, decide_approval, send_message, send_task
from tests.helpers.dashboard import text
from tests.helpers.tasks import broadcasts


@pytest.fixture
def fleet(online):
    for alias in ("coder-1", "coder-2"):
        online(alias)


def rule(network, **fields) -> ApprovalRule:
    return ApprovalRule.objects.create(network=network, name=fields.pop("name", "hold it"), **fields)


def rule_form(**fields) -> dict[str, str]:
    return {"name": "gate messages", "tool": "send_message", "tier": "1", "timeout_seconds": "3600", "enabled": "on",
            **fields}  # fmt: skip


def test_the_page_lists_a_pending_approval_with_its_votes(login, network, agent, make_actor, fleet):
    rule(network, tool="broadcast", tier=ApprovalRule.Tier.TWO, name="two keys for broadcasts")
    held = broadcast(actor=agent, message="deploy the release now")
    owner = make_actor(network, "owner")
    decide_approval(actor=owner, approval_id=held["approval_id"], decision="approve")

    page = text(login("admin").get("/approvals/"))

    assert held["approval_id"] in page and "two keys for broadcasts" in page and agent.label in page
    assert "deploy the release now" in page and "&quot;message&quot;: &quot;deploy the release now&quot;" in page
    assert "<b>1 of 2</b>" in page and f"approved by {owner.label}" in page
    assert 'value="approve"' in page and 'value="reject"' in page


def test_approving_runs_the_held_call_and_says_so(login, network, agent, fleet):
    rule(network, tool="broadcast")
    held = broadcast(actor=agent, message="deploy at 5")
    browser = login("admin")
    assert 'data-live="approvals_count" class="count-badge on"' in text(browser.get("/approvals/"))

    reply = browser.post(f"/approvals/{held['approval_id']}/decide/", {"decision": "approve"}, follow=True)

    assert reply.redirect_chain == [("/approvals/", 302)]
    assert "Approved: the call ran." in text(reply)
    assert Approval.objects.get(pk=held["approval_id"]).status == "approved"
    assert broadcasts() == 2
    assert "count-badge on" not in text(reply) and "Nothing decided yet" not in text(reply)
    again = browser.post(f"/approvals/{held['approval_id']}/decide/", {"decision": "approve"}, follow=True)
    assert "is already approved" in text(again) and broadcasts() == 2


def test_the_first_of_two_approvals_waits_for_another_approver(login, network, agent, fleet):
    rule(network, tool="broadcast", tier=ApprovalRule.Tier.TWO)
    held = broadcast(actor=agent, message="deploy at 6")
    browser = login("owner")

    reply = browser.post(f"/approvals/{held['approval_id']}/decide/", {"decision": "approve"}, follow=True)

    assert "Approved (1 of 2): waiting for another approver." in text(reply)
    assert "You approved it: waiting for another approver." in text(reply) and 'value="approve"' not in text(reply)
    assert broadcasts() == 0


def test_rejecting_with_a_note_never_runs_the_call(login, network, agent, fleet):
    rule(network, tool="broadcast")
    held = broadcast(actor=agent, message="rm -rf the cache")

    reply = login("owner").post(
        f"/approvals/{held['approval_id']}/decide/", {"decision": "reject", "note": "not today"}, follow=True
    )

    assert "Rejected: the call will not run." in text(reply)
    approval = Approval.objects.get(pk=held["approval_id"])
    assert approval.status == "rejected" and approval.reason.endswith(": not today")
    assert "“not today”" in text(reply)  # the vote's note, among the decided
    assert broadcasts() == 0


def test_a_call_refused_when_it_runs_is_shown_as_such(login, network, agent):
    rule(network, tool="cancel_task")
    sent = send_task(actor=agent, alias="coder", task="ship it")
    held = cancel_task(actor=agent, task_id=sent["task_id"])
    Task.objects.filter(pk=sent["task_id"]).update(status="replied")  # it ended meanwhile

    reply = login("owner").post(f"/approvals/{held['approval_id']}/decide/", {"decision": "approve"}, follow=True)

    assert "Approved, but the call was refused:" in text(reply)
    assert Approval.objects.get(pk=held["approval_id"]).status == "failed"


def test_a_member_sees_no_buttons_and_a_forged_post_changes_nothing(login, network, agent, fleet):
    rule(network, tool="broadcast")
    held = broadcast(actor=agent, message="deploy at 7")
    member = login("member", username="mere-member")

    page = text(member.get("/approvals/"))
    assert "deploy at 7" in page and "Waiting for an owner or admin" in page
    assert 'value="approve"' not in page and 'id="rules"' not in page

    reply = member.post(f"/approvals/{held['approval_id']}/decide/", {"decision": "approve"}, follow=True)

    assert "Only the owners and admins" in text(reply)
    assert Approval.objects.get(pk=held["approval_id"]).status == "pending"
    assert not ApprovalVote.objects.exists() and broadcasts() == 0
    assert member.get("/approvals/rules/new/").status_code == 403
    member.post("/approvals/rules/new/", rule_form())
    assert not ApprovalRule.objects.filter(name="gate messages").exists()


def test_rules_set_on_the_page_are_audited_and_apply_from_the_next_call(login, network, agent):
    browser = login("admin")

    created = browser.post("/approvals/rules/new/", rule_form(target_alias="prod"))

    assert created.status_code == 302 and created["Location"] == "/approvals/#rules"
    made = ApprovalRule.objects.get(network=network, name="gate messages")
    assert (made.tool, made.target_alias, made.created_by) == ("send_message", "prod", "user:operator")
    assert send_message(actor=agent, alias="prod", message="restart")["pending_approval"] is True
    assert "gate messages" in text(browser.get("/approvals/"))

    edit = text(browser.get(f"/approvals/rules/{made.pk}/"))
    assert 'name="target_alias" value="prod"' in edit and "Save rule" in edit
    browser.post(f"/approvals/rules/{made.pk}/", rule_form(target_alias="prod", enabled=""))
    assert "approval_id" not in send_message(actor=agent, alias="prod", message="restart again")

    browser.post(f"/approvals/rules/{made.pk}/delete/")
    assert not ApprovalRule.objects.filter(pk=made.pk).exists()
    changes = AuditEntry.objects.filter(action="approval.rule_changed", target="approval rule gate messages")
    assert [entry.detail["change"] for entry in changes.order_by("pk")] == ["created", "changed", "deleted"]
    assert {entry.actor for entry in changes} == {"user:operator"}


def test_the_rule_form_checks_the_model_and_offers_only_the_networks_live_tokens(login, network, other_network, agent):
    mine = ApiToken.objects.get(name="member-token")
    revoked, _ = token_create(network=network, role="member", name="retired")
    token_revoke(token=revoked, by="test")
    theirs, _ = token_create(network=other_network, role="member", name="elsewhere")
    browser = login("owner")

    form = text(browser.get("/approvals/"))
    assert f'value="{mine.pk}"' in form and "retired" not in form and "elsewhere" not in form

    too_short = browser.post("/approvals/rules/new/", rule_form(timeout_seconds="30"))
    foreign = browser.post("/approvals/rules/new/", rule_form(sender_token=str(theirs.pk)))

    assert too_short.status_code == 400 and "Between 60 and" in text(too_short)
    assert foreign.status_code == 400 and re.search(r"Select a valid choice", text(foreign))
    assert not ApprovalRule.objects.exists()
    theirs_rule = ApprovalRule.objects.create(network=other_network, name="their rule")
    assert browser.get(f"/approvals/rules/{theirs_rule.pk}/").status_code == 404
    refused = browser.post(f"/approvals/rules/{theirs_rule.pk}/delete/", follow=True)
    assert "No approval rule" in text(refused) and ApprovalRule.objects.filter(pk=theirs_rule.pk).exists()


def test_the_dashboards_own_writes_that_a_rule_holds_say_held(login, network, agent, online):
    online("coder")
    rule(network, sender_role="owner", name="every write of the owners")
    browser = login("owner")

    dispatched = browser.post("/dispatch/", {"alias": "coder", "task": "from the form"}, follow=True)
    broadcast = browser.post("/broadcast/", {"message": "deploy at 5"}, follow=True)

    assert dispatched.redirect_chain == [("/approvals/", 302)]
    assert re.search(r"Held for approval \(apr_\w+\): it runs once one approver says yes\.", text(dispatched))
    assert "You made this call: another approver decides it." in text(dispatched)
    assert broadcast.redirect_chain[-1][0] == "/dispatch/#broadcast"
    assert "Held for approval (apr_" in text(broadcast)
    assert not Task.objects.filter(content="from the form").exists() and broadcasts() == 0


def test_a_task_action_that_a_rule_holds_says_held(login, network, agent, online):
    online("coder")
    sent = send_task(actor=agent, alias="coder", task="ship it")
    rule(network, tool="cancel_task")

    reply = login("owner").post(f"/tasks/{sent['task_id']}/cancel/", {"reason": "not now"}, follow=True)

    assert reply.redirect_chain == [(f"/tasks/{sent['task_id']}/", 302)]
    assert "Held for approval (apr_" in text(reply) and 'href="/approvals/"' in text(reply)
    assert Task.objects.get(pk=sent["task_id"]).status == "delivered"


def test_the_count_renders_as_a_live_fragment(login, network, agent, fleet):
    rule(network, tool="broadcast")
    broadcast(actor=agent, message="one")
    broadcast(actor=agent, message="two")

    fragment = text(login("viewer").get("/fleet/?fragment=approvals_count"))

    assert fragment.startswith('<span data-live="approvals_count" class="count-badge on"') and ">2</span>" in fragment
    assert "<html" not in fragment
    region = text(login("owner", username="boss").get("/approvals/?fragment=approvals"))
    assert region.count('class="approval open"') == 2 and "<html" not in region and 'id="rules"' not in region


def test_a_call_past_its_timeout_is_shown_expired_never_offered(login, network, agent, fleet):
    rule(network, tool="broadcast")
    held = broadcast(actor=agent, message="too late")
    Approval.objects.filter(pk=held["approval_id"]).update(expires_at=timezone.now() - timedelta(seconds=1))

    page = text(login("owner").get("/approvals/"))

    assert "No call waits for approval" in page and 'value="approve"' not in page
    assert "t-expired" in page and "nobody decided within" in page
    assert Approval.objects.get(pk=held["approval_id"]).status == "expired"
