"""Approvals: a network's rules that hold some writes for a person's (or a supervisor agent's) yes,
and the calls they hold. hub_approvals.services applies them at the door every call passes (the
registry's `Tool.execute`); a held call runs once, as its caller, when enough approvers said yes.

The tables keep the names they had when these models lived in hub_tools (`db_table`): the move
changed no row. A rule's tool is text, checked where rules are made against the tools whose spec
says `gateable` (hub_approvals.port): a new gateable tool needs no migration.
"""

from __future__ import annotations

import secrets

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from hub_agents.models import ApiToken, Network, Role
from hub_tasks.models import Priority

PRIORITY_RANK = {Priority.LOW: 0, Priority.NORMAL: 1, Priority.HIGH: 2}
TIMEOUT_DEFAULT = 86_400
TIMEOUT_MAX = 7 * 86_400


def new_approval_id() -> str:
    return f"apr_{secrets.token_hex(8)}"


class ApprovalRule(models.Model):
    """Which calls need approval in a network, and how much: every condition set must hold (an empty
    one matches anything). Of several matching rules the strictest applies."""

    class Tier(models.IntegerChoices):
        ONE = 1, "one approver"
        TWO = 2, "two approvers"

    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="approval_rules")
    name = models.CharField(max_length=200, help_text="What the rule is for, as approvers will see it.")
    tool = models.CharField(
        max_length=32, blank=True, help_text="Only calls of this tool; empty: every tool a rule may hold."
    )
    target_alias = models.CharField(
        max_length=200, blank=True, help_text="Only calls addressed to this alias (alias, or new_alias of a reassign)."
    )
    min_priority = models.CharField(
        max_length=8,
        blank=True,
        choices=Priority.choices,
        help_text="Only tasks sent at this priority or higher (send_task).",
    )
    sender_token = models.ForeignKey(
        ApiToken,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="Only calls made with this token.",
    )
    sender_role = models.CharField(
        max_length=16, blank=True, choices=Role.choices, help_text="Only callers with this role in the network."
    )
    tier = models.PositiveSmallIntegerField(choices=Tier.choices, default=Tier.ONE)
    # Auto-approval: a trusted caller's call runs at once (recorded as approved by the rule).
    trusted_tokens = models.ManyToManyField(
        ApiToken, blank=True, related_name="+", help_text="Calls made with these tokens are approved at once."
    )
    trust_admins = models.BooleanField(
        default=False, help_text="Calls by the network's owners and admins are approved at once."
    )
    timeout_seconds = models.PositiveIntegerField(
        default=TIMEOUT_DEFAULT, help_text="A call nobody decided within this long expires (the caller is told)."
    )
    enabled = models.BooleanField(default=True)
    created_by = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        db_table = "hub_tools_approvalrule"
        indexes = [models.Index(fields=["network", "enabled"], name="approval_rule_network")]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if not 60 <= self.timeout_seconds <= TIMEOUT_MAX:
            raise ValidationError({"timeout_seconds": f"Between 60 and {TIMEOUT_MAX} seconds."})
        if self.sender_token_id is not None and self.sender_token.network_id not in (None, self.network_id):
            raise ValidationError({"sender_token": "A network token of another network never calls here."})


class ApprovalStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"  # enough approvers said yes, and the call ran (its result is kept)
    FAILED = "failed"  # approved, but the call was refused when it ran (its error is kept)
    REJECTED = "rejected"
    EXPIRED = "expired"


class Approval(models.Model):
    """One held call: what was asked (the tool and its arguments, as given), by whom, and how it ended."""

    id = models.CharField(primary_key=True, max_length=40, default=new_approval_id, editable=False)
    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="approvals")
    rule = models.ForeignKey(ApprovalRule, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    rule_name = models.CharField(max_length=200)
    tool = models.CharField(max_length=32)
    arguments = models.JSONField()
    summary = models.CharField(max_length=500)
    # Who asked: run as them once approved (re-authenticated then: a revoked caller's call fails).
    requester_key = models.CharField(max_length=64)
    requester_person = models.CharField(max_length=64, default="", help_text="Actor.person: who may not approve it.")
    requester_label = models.CharField(max_length=300)
    # The caller's alias (from_session), told of the outcome in its inbox; empty: nobody to tell.
    notify_alias = models.CharField(max_length=200, blank=True)
    approvals_required = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=16, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING)
    reason = models.TextField(blank=True)  # why it was rejected, expired or failed
    result = models.JSONField(null=True, blank=True)  # the call's result object, once it ran
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField()
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "hub_tools_approval"
        indexes = [
            models.Index(fields=["network", "status", "expires_at"], name="approval_network_status"),
            models.Index(fields=["network", "-created_at"], name="approval_network_newest"),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.tool} ({self.status})"


class ApprovalVote(models.Model):
    """One approver's decision on a held call; an approver decides once."""

    class Decision(models.TextChoices):
        APPROVE = "approve"
        REJECT = "reject"

    approval = models.ForeignKey(Approval, on_delete=models.CASCADE, related_name="votes")
    approver_key = models.CharField(max_length=64)
    approver_person = models.CharField(max_length=64, default="", help_text="Actor.person: one vote each.")
    approver_label = models.CharField(max_length=300)
    decision = models.CharField(max_length=8, choices=Decision.choices)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        db_table = "hub_tools_approvalvote"
        constraints = [models.UniqueConstraint(fields=["approval", "approver_person"], name="one_vote_per_person")]
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.decision} by {self.approver_label}"
