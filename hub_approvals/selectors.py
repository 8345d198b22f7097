"""Reading approvals, scoped to the caller's networks."""

from __future__ import annotations

from typing import Any

from django.db.models import F, Prefetch
from django.utils import timezone

from hub_agents.actors import Actor
from hub_approvals.models import Approval, ApprovalRule, ApprovalStatus, ApprovalVote
from hub_core.formats import timestamp
from hub_tasks import limits


def approval_rows(
    *,
    actor: Actor,
    status: str | None = None,
    approval_id: str | None = None,
    network_id: str | None = None,
    limit: int = limits.QUESTIONS_LIMIT_DEFAULT,
) -> list[dict[str, Any]]:
    """list_approvals: pending first (oldest first), then decided (newest first)."""
    approvals = Approval.objects.filter(network_id__in=actor.readable_networks(network_id))
    if status is not None:
        approvals = approvals.filter(status=status)
    if approval_id is not None:
        approvals = approvals.filter(pk=approval_id)
    approvals = approvals.prefetch_related(
        Prefetch("votes", queryset=ApprovalVote.objects.order_by("created_at", "pk"))
    )
    ordered = approvals.order_by(F("decided_at").desc(nulls_first=True), "created_at", "pk")
    return [approval_row(approval) for approval in ordered[:limit]]


def approval_row(approval: Approval) -> dict[str, Any]:
    return {
        "approval_id": approval.id,
        "network_id": approval.network_id,
        "tool": approval.tool,
        "arguments": approval.arguments,
        "summary": approval.summary,
        "rule": approval.rule_name,
        "requested_by": approval.requester_label,
        "notify_alias": approval.notify_alias or None,
        "status": approval.status,
        "approvals_required": approval.approvals_required,
        "votes": [
            {
                "approver": vote.approver_label,
                "decision": vote.decision,
                "note": vote.note,
                "at": timestamp(vote.created_at),
            }
            for vote in approval.votes.all()
        ],
        "reason": approval.reason,
        "result": approval.result,
        "created_at": timestamp(approval.created_at),
        "expires_at": timestamp(approval.expires_at),
        "decided_at": timestamp(approval.decided_at),
    }


def approval_rules(*, actor: Actor, network_id: str) -> list[ApprovalRule]:
    """The network's approval rules, by name, with their tokens (the dashboard's rules table)."""
    rules = ApprovalRule.objects.filter(network_id__in=actor.readable_networks(network_id))
    rules = rules.select_related("sender_token").prefetch_related("trusted_tokens")
    return list(rules.order_by("name", "pk"))


def approvals_waiting(*, network_id: str) -> int:
    """How many calls of the network wait for an approver (the dashboard's count)."""
    waiting = Approval.objects.filter(network_id=network_id, status=ApprovalStatus.PENDING)
    return waiting.filter(expires_at__gt=timezone.now()).count()  # an expiry not yet swept waits for nobody
