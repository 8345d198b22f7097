"""The dashboard's approvals page: calls a rule holds, decided by the network's owners and admins,
and the rules themselves. Decisions go through the tool registry (decide_approval), rules through
their services, as every other transport's do."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from hub_approvals.models import ApprovalRule, ApprovalStatus, ApprovalVote
from hub_approvals.selectors import approval_rows, approval_rules
from hub_approvals.services import ApprovalDecided, approval_rule_delete, approval_rule_save, approvals_expire_due
from hub_core.errors import HubError
from hub_core.formats import duration
from hub_dashboard.forms import ApprovalRuleForm
from hub_dashboard.views import Desk, live_page
from hub_dashboard.wording import refusal_for_operator
from hub_tasks import limits
from hub_tools.tools import invoke

PENDING_SHOWN = 100  # every call waiting for a decision first
DECIDED_SHOWN = 25  # then the latest decided ones


@login_required
def approvals_page(request: HttpRequest) -> HttpResponse:
    desk = Desk(request)
    if desk.network_id is None:
        return render(request, "dashboard/no_network.html", desk.context())
    approvals_expire_due(network_ids=[desk.network_id])  # nothing past its timeout offered for a vote
    # Pending first, then decided, newest first: one read, split.
    rows = [
        _shown(row, desk)
        for row in approval_rows(actor=desk.actor, network_id=desk.network_id, limit=PENDING_SHOWN + DECIDED_SHOWN)
    ]
    pending = [row for row in rows if row["status"] == ApprovalStatus.PENDING]
    decided = [row for row in rows if row["status"] != ApprovalStatus.PENDING][:DECIDED_SHOWN]
    context = {"pending": pending, "decided": decided, "note_max": limits.ANSWER_MAX, "section": "approvals"}
    if desk.can_audit and "fragment" not in request.GET:
        context["rules"] = _rules(desk)
        context["rule_form"] = ApprovalRuleForm(network_id=desk.network_id)
    return live_page(request, "dashboard/approvals.html", desk.context(**context))


def _shown(row: dict[str, Any], desk: Desk) -> dict[str, Any]:
    """A row of approval_rows with what the page shows besides: the yes votes so far, the arguments
    as indented JSON, and whether this operator may still vote on it."""
    yes = sum(vote["decision"] == ApprovalVote.Decision.APPROVE for vote in row["votes"])
    voted = any(vote["approver"] == desk.actor.label for vote in row["votes"])
    own = row["requested_by"] == desk.actor.label
    return {
        **row,
        "yes": yes,
        "arguments_text": json.dumps(row["arguments"], indent=2, ensure_ascii=False),
        "result_text": json.dumps(row["result"], indent=2, ensure_ascii=False) if row["result"] else "",
        "voted": voted,
        "own": own,
        "may_decide": desk.can_audit and not voted and not own,
    }


def _rules(desk: Desk) -> list[ApprovalRule]:
    listed = approval_rules(actor=desk.actor, network_id=desk.network_id)
    for rule in listed:
        rule.timeout_text = duration(rule.timeout_seconds)
    return listed


@login_required
@require_POST
def approval_decide_action(request: HttpRequest, approval_id: str) -> HttpResponse:
    desk = Desk(request)
    arguments = {"approval_id": approval_id, "decision": request.POST.get("decision", ""), "note": None}
    if note := request.POST.get("note", "").strip():
        arguments["note"] = note
    try:
        decided = invoke("decide_approval", desk.actor, arguments)
    except HubError as refusal:
        messages.error(request, refusal_for_operator(refusal).text)
    else:
        level = messages.ERROR if decided.status == ApprovalStatus.FAILED else messages.SUCCESS
        messages.add_message(request, level, _outcome(decided))
    return redirect("dashboard:approvals")


def _outcome(decided: ApprovalDecided) -> str:
    """What the approver reads after a vote."""
    if decided.status == ApprovalStatus.APPROVED:
        return "Approved: the call ran."
    if decided.status == ApprovalStatus.PENDING:
        return f"Approved ({decided.approvals} of {decided.approvals_required}): waiting for another approver."
    if decided.status == ApprovalStatus.FAILED:
        refusal = (decided.result or {}).get("message") or decided.reason
        return f"Approved, but the call was refused: {refusal}"
    if decided.status == ApprovalStatus.REJECTED:
        return "Rejected: the call will not run."
    return f"The approval is {decided.status}: {decided.reason}"


@login_required
def approval_rule_page(request: HttpRequest, rule_id: int | None = None) -> HttpResponse:
    """A rule's form: a new rule (the approvals page posts its form here) or one to change."""
    desk = Desk(request)
    if desk.network_id is None:
        return render(request, "dashboard/no_network.html", desk.context())
    if not desk.can_audit:  # the form would show the network's tokens; the service refuses the save anyway
        message = "Only the network's owners and admins set its approval rules."
        return render(request, "dashboard/not_found.html", desk.context(message=message), status=403)
    rule = None
    if rule_id is not None:
        rule = ApprovalRule.objects.filter(pk=rule_id, network_id=desk.network_id).first()
        if rule is None:
            message = "No such approval rule in this network: it may have been deleted; see the Approvals page."
            return render(request, "dashboard/not_found.html", desk.context(message=message), status=404)
    form = ApprovalRuleForm(request.POST or None, instance=rule, network_id=desk.network_id)
    if request.method == "POST" and form.is_valid():
        try:
            saved = approval_rule_save(
                actor=desk.actor,
                rule=form.save(commit=False),
                trusted_token_ids=[token.pk for token in form.cleaned_data["trusted_tokens"]],
            )
        except HubError as refusal:
            messages.error(request, refusal_for_operator(refusal).text)
        else:
            done = "changed" if rule else "created"
            messages.success(request, f"Rule “{saved.name}” {done}: it applies from the next call.")
        return redirect(reverse("dashboard:approvals") + "#rules")
    return render(
        request,
        "dashboard/approval_rule.html",
        desk.context(rule=rule, form=form, section="approvals"),
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def approval_rule_delete_action(request: HttpRequest, rule_id: int) -> HttpResponse:
    desk = Desk(request)
    try:
        approval_rule_delete(actor=desk.actor, rule_id=rule_id)
    except HubError as refusal:
        messages.error(request, refusal_for_operator(refusal).text)
    else:
        messages.success(request, "Rule deleted: the calls it already held still wait for a decision.")
    return redirect(reverse("dashboard:approvals") + "#rules")
