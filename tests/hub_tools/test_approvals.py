"""Approvals through the tools: a network's rules hold some writes; a held call answers
pending_approval, runs exactly once when its tier of approvers said yes (as its caller, its result
kept), never after a rejection or its timeout, and its caller's alias hears how it ended.
Racing approvers on real threads: tests/hub_tools/test_approval_races.py.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from hub_agents.models import ApiToken, AuditEntry
from hub_agents.services import actor_for_user, token_revoke
from hub_approvals import services as approvals
from hub_approvals.models import Approval, ApprovalRule
from hub_events.models import Event
from hub_tasks.models import InboxMessage, Task, TaskStatus
from tests.helpers import refused
from tests.helpers.calls import (
    broadcast,
    cancel_task,
    decide_approval,
    get_inbox,
    list_approvals,
    reassign_task,
    report_completion,
    retry_task,
    send_message,
    send_task,
)
from tests.helpers.tasks import broadcasts

PLANNER = "planner"
User = get_user_model()


@pytest.fixture
def admin(make_actor, network):
    return make_actor(network, "admin")


@pytest.fixture
def fleet(online):
    for alias in ("coder-1", "coder-2", "coder-3"):
        online(alias)
    return ["coder-1", "coder-2", "coder-3"]


def rule(network, **fields) -> ApprovalRule:
    trusted = fields.pop("trusted_tokens", [])
    made = ApprovalRule.objects.create(network=network, name=fields.pop("name", "hold it"), **fields)
    made.trusted_tokens.set(trusted)
    return made


def notices(alias: str) -> list[str]:
    return list(
        InboxMessage.objects.filter(to_alias=alias, type=InboxMessage.Type.NOTICE).values_list("content", flat=True)
    )


def test_a_gated_broadcast_runs_once_after_two_approvals(network, agent, owner, admin, fleet):
    rule(network, tool="broadcast", tier=ApprovalRule.Tier.TWO)

    held = broadcast(actor=agent, message="deploy the release now")

    assert held["pending_approval"] is True and held["approvals_required"] == 2
    assert "recipients" not in held and broadcasts() == 0
    (pending,) = list_approvals(actor=owner, status="pending")["approvals"]
    assert pending["approval_id"] == held["approval_id"]
    assert (pending["tool"], pending["requested_by"]) == ("broadcast", agent.label)
    assert "deploy the release now" in pending["summary"]

    first = decide_approval(actor=owner, approval_id=held["approval_id"], decision="approve")
    assert (first["status"], first["approvals"], first["result"]) == ("pending", 1, None)
    assert broadcasts() == 0
    again = refused(decide_approval, actor=owner, approval_id=held["approval_id"], decision="approve")
    assert again.code == "approval_voted" and again.status == 409

    second = decide_approval(actor=admin, approval_id=held["approval_id"], decision="approve", note="checked")

    assert (second["status"], second["approvals"]) == ("approved", 2)
    assert second["result"]["ok"] is True and second["result"]["recipients"] == 3
    assert broadcasts() == 3
    late = refused(decide_approval, actor=admin, approval_id=held["approval_id"], decision="reject")
    assert late.code == "approval_decided" and late.extra["approval_status"] == "approved"
    assert broadcasts() == 3
    (done,) = list_approvals(actor=agent, approval_id=held["approval_id"])["approvals"]
    assert done["status"] == "approved" and [v["decision"] for v in done["votes"]] == ["approve", "approve"]
    assert done["result"]["message_ids"] == second["result"]["message_ids"]
    actions = AuditEntry.objects.filter(target=f"approval {held['approval_id']}").values_list("action", flat=True)
    assert sorted(actions) == ["approval.approved", "approval.approved", "approval.requested"]


def test_a_rejected_call_never_runs_and_its_caller_hears_why(network, agent, owner, admin, fleet):
    rule(network, tool="broadcast", tier=ApprovalRule.Tier.TWO)
    held = broadcast(actor=agent, message="rm -rf the cache")
    decide_approval(actor=owner, approval_id=held["approval_id"], decision="approve")

    rejected = decide_approval(actor=admin, approval_id=held["approval_id"], decision="reject", note="not today")

    assert rejected["status"] == "rejected" and "not today" in rejected["reason"]
    assert refused(decide_approval, actor=owner, approval_id=held["approval_id"], decision="approve").status == 409
    assert broadcasts() == 0
    assert AuditEntry.objects.filter(action="approval.rejected", target=f"approval {held['approval_id']}").exists()


def test_the_callers_alias_is_told_the_outcome(network, agent, owner):
    rule(network, tool="send_task", target_alias="prod-deployer")
    held = send_task(actor=agent, alias="prod-deployer", task="ship v2", from_session=PLANNER)
    told = Event.objects.filter(type="approval_requested", audience=PLANNER)
    assert told.count() == 1

    ran = decide_approval(actor=owner, approval_id=held["approval_id"], decision="approve")

    task_id = ran["result"]["task_id"]
    (notice,) = notices(PLANNER)
    assert held["approval_id"] in notice and task_id in notice
    (delivered,) = get_inbox(actor=agent, alias="prod-deployer")["messages"]
    assert (delivered["id"], delivered["from_session"]) == (task_id, PLANNER)


def test_the_caller_may_not_approve_its_own_call_nor_may_members(network, owner, agent):
    rule(network, tool="broadcast")
    held = broadcast(actor=owner, message="mine")

    own = refused(decide_approval, actor=owner, approval_id=held["approval_id"], decision="approve")
    member = refused(decide_approval, actor=agent, approval_id=held["approval_id"], decision="approve")

    assert (own.code, own.status) == ("permission_denied", 403)
    assert (member.code, member.status) == ("permission_denied", 403)


def test_one_person_is_one_approver_whatever_token_or_session_they_use(network, make_actor, fleet):
    """Two user tokens of alice, and her dashboard session, are all alice: she may not approve her own
    call, and bob may not fill a two-approver tier alone with two tokens."""
    rule(network, tool="broadcast", tier=ApprovalRule.Tier.TWO)
    alice = make_actor(user="alice", memberships={network: "owner"})
    alice_again = make_actor(user="alice")
    alice_desk = actor_for_user(alice_again_user := User.objects.get(username="alice"))
    bob, bob_again = make_actor(user="bob", memberships={network: "admin"}), make_actor(user="bob")
    held = broadcast(actor=alice, message="mine")

    for own in (alice_again, alice_desk):
        assert refused(decide_approval, actor=own, approval_id=held["approval_id"], decision="approve").code == (
            "permission_denied"
        )
    decide_approval(actor=bob, approval_id=held["approval_id"], decision="approve")
    twice = refused(decide_approval, actor=bob_again, approval_id=held["approval_id"], decision="approve")

    assert twice.code == "approval_voted" and broadcasts() == 0
    assert alice_again_user.pk == alice.user_id


def test_a_decider_that_finds_its_approval_past_its_time_expires_it_and_runs_nothing(
    network, agent, owner, clock, fleet, monkeypatch
):
    """The sweep skips a row a decider holds (skip_locked): the decider, once it has the lock, finds
    the approval past its time itself. Here the sweep before the vote finds nothing, as when it skipped."""
    rule(network, tool="send_task", timeout_seconds=3600)
    held = send_task(actor=agent, alias="coder-1", task="late", from_session=PLANNER)
    clock.tick(3601)
    monkeypatch.setattr(approvals, "approvals_expire_due", lambda **_: 0)

    late = refused(decide_approval, actor=owner, approval_id=held["approval_id"], decision="approve")

    assert (late.code, late.status) == ("approval_decided", 409) and "expired" in late.message
    assert Approval.objects.get(pk=held["approval_id"]).status == "expired"  # committed, not rolled back
    assert get_inbox(actor=agent, alias="coder-1")["messages"] == []
    assert AuditEntry.objects.filter(action="approval.expired").count() == 1


def test_other_networks_see_no_approval(network, agent, outsider, make_actor, other_network):
    rule(network, tool="broadcast")
    held = broadcast(actor=agent, message="hello")
    stranger = make_actor(other_network, "owner")

    assert list_approvals(actor=outsider)["approvals"] == []
    gone = refused(decide_approval, actor=stranger, approval_id=held["approval_id"], decision="approve")
    assert (gone.code, gone.status) == ("approval_not_found", 404)


def test_only_matching_calls_are_held(network, agent, admin, make_actor, fleet):
    rule(network, tool="send_task", min_priority="high", name="urgent work")
    rule(network, target_alias="coder-3", name="coder-3 is on prod")
    rule(network, tool="broadcast", sender_role="admin", name="admins broadcast carefully")
    ci = make_actor(network, "member")
    rule(network, tool="send_message", sender_token_id=int(ci.key.split(":")[1]), name="the CI token")

    assert "task_id" in send_task(actor=agent, alias="coder-1", task="t", priority="normal")
    assert send_task(actor=agent, alias="coder-1", task="t", priority="high")["pending_approval"]
    assert send_task(actor=agent, alias="coder-3", task="t")["pending_approval"]
    assert "recipients" in broadcast(actor=agent, message="from a member")
    assert broadcast(actor=admin, message="from an admin")["pending_approval"]
    assert "message_id" in send_message(actor=agent, alias="coder-1", message="hi")
    assert send_message(actor=ci, alias="coder-1", message="hi")["pending_approval"]
    assert "recipients" in broadcast(actor=agent, message="rules only hold what they name")


def test_the_strictest_matching_rule_applies_and_trusted_callers_go_through(network, agent, owner, make_actor, fleet):
    trusted = make_actor(network, "member")
    rule(network, tool="broadcast", tier=ApprovalRule.Tier.ONE, name="one")
    rule(
        network,
        tool="broadcast",
        tier=ApprovalRule.Tier.TWO,
        name="two",
        trusted_tokens=[int(trusted.key.split(":")[1])],
        trust_admins=True,
    )

    assert broadcast(actor=agent, message="x")["approvals_required"] == 2
    # Trusted by "two" but not by "one": still held, by "one".
    assert broadcast(actor=trusted, message="y")["approvals_required"] == 1
    ApprovalRule.objects.filter(name="one").update(trust_admins=True)  # an .update(): no signal
    ApprovalRule.objects.get(name="one").save()  # a save: the gate sees it at once
    ran = broadcast(actor=owner, message="z")
    assert ran["recipients"] == 3
    assert AuditEntry.objects.filter(action="approval.approved", actor=owner.label, detail__auto=True).count() == 1


def test_a_rule_added_later_holds_the_next_call(network, agent, fleet):
    assert "recipients" in broadcast(actor=agent, message="before")  # the gate remembers "no rules"

    rule(network, tool="broadcast")

    assert broadcast(actor=agent, message="after")["pending_approval"] is True
    ApprovalRule.objects.get().delete()
    assert "recipients" in broadcast(actor=agent, message="deleted")


def test_a_call_nobody_decides_expires_and_never_runs(network, agent, owner, clock, fleet):
    rule(network, tool="send_task", timeout_seconds=3600)
    held = send_task(actor=agent, alias="coder-1", task="late", from_session=PLANNER)

    clock.tick(3601)
    (expired,) = list_approvals(actor=owner)["approvals"]

    assert expired["status"] == "expired" and "1 hour" in expired["reason"]
    late = refused(decide_approval, actor=owner, approval_id=held["approval_id"], decision="approve")
    assert late.code == "approval_decided"
    assert get_inbox(actor=agent, alias="coder-1")["messages"] == []
    (notice,) = notices(PLANNER)
    assert "will not run" in notice and "nobody decided within 1 hour" in notice
    assert AuditEntry.objects.filter(action="approval.expired").count() == 1


def test_an_approved_call_the_hub_then_refuses_is_kept_as_failed(network, agent, owner, fleet):
    task_id = send_task(actor=agent, alias="coder-1", task="t")["task_id"]
    rule(network, tool="cancel_task")
    held = cancel_task(actor=agent, task_id=task_id)
    assert Approval.objects.get(pk=held["approval_id"]).status == "pending"

    report_completion(actor=agent, alias="coder-1", task=task_id, result="done already")

    decided = decide_approval(actor=owner, approval_id=held["approval_id"], decision="approve")

    assert decided["status"] == "failed" and "then refused" in decided["reason"]
    assert decided["result"]["ok"] is False and decided["result"]["error"]


def test_a_revoked_callers_call_does_not_run(network, make_actor, owner, fleet):
    caller = make_actor(network, "member")
    rule(network, tool="broadcast")
    held = broadcast(actor=caller, message="from a token revoked since")
    token_revoke(token=ApiToken.objects.get(pk=int(caller.key.split(":")[1])), by=owner.label)

    decided = decide_approval(actor=owner, approval_id=held["approval_id"], decision="approve")

    assert decided["status"] == "failed" and "revoked" in decided["reason"]
    assert broadcasts() == 0


def test_approvers_read_the_arguments_given_and_a_dashboard_sender_gets_no_notice(network, agent, owner):
    rule(network, tool="send_task")
    held = send_task(actor=agent, alias="coder-1", task="ship it", from_session="dashboard:alice")

    (row,) = list_approvals(actor=owner)["approvals"]
    assert row["summary"] == "send_task(alias='coder-1', task='ship it', from_session='dashboard:alice')"
    assert row["notify_alias"] is None
    decide_approval(actor=owner, approval_id=held["approval_id"], decision="reject")
    assert notices("dashboard:alice") == []


def test_a_rule_aimed_at_an_alias_holds_what_others_do_to_its_tasks(network, agent, owner, fleet):
    """retry_task, cancel_task and reassign_task name a task, not an alias: the rule matches the task's
    agent (issue 24), and the call runs as asked once approved."""
    ours = send_task(actor=agent, alias="coder-3", task="migrate prod")["task_id"]
    theirs = send_task(actor=agent, alias="coder-1", task="migrate staging")["task_id"]
    rule(network, target_alias="coder-3", tool="cancel_task", name="coder-3 is on prod")
    rule(network, target_alias="coder-3", tool="retry_task", name="coder-3 retries")
    rule(network, target_alias="coder-3", tool="reassign_task", name="coder-3 keeps its work")

    assert reassign_task(actor=agent, task_id=theirs, new_alias="coder-2")["task_id"] == theirs  # not held
    assert cancel_task(actor=agent, task_id=theirs)["cancelled"] is True
    assert reassign_task(actor=agent, task_id=ours, new_alias="coder-2")["pending_approval"] is True
    held = cancel_task(actor=agent, task_id=ours)
    assert held["pending_approval"] is True
    assert Task.objects.get(pk=ours).status != TaskStatus.CANCELLED

    decide_approval(actor=owner, approval_id=held["approval_id"], decision="approve")
    assert Task.objects.get(pk=ours).status == TaskStatus.CANCELLED
    assert retry_task(actor=agent, task_id=ours)["pending_approval"] is True
    assert "task_id" in retry_task(actor=agent, task_id=theirs)
