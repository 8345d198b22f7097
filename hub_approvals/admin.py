"""The admin: approval rules (changed here like on the dashboard, and audited alike) and the calls
they held, read-only: a held call is decided by its approvers (decide_approval), never edited."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from hub_agents.admin import actor_label
from hub_agents.audit import audit_record
from hub_agents.models import AuditEntry
from hub_approvals.models import Approval, ApprovalRule, ApprovalVote
from hub_approvals.port import tool_choices


def _audit_rule(request: HttpRequest, rule: ApprovalRule, change: str) -> None:
    """The same record approval_rule_save and approval_rule_delete write: a rule's every change is
    audited, wherever it was made. (The gate's cache needs nothing: the model's signals refresh it.)"""
    detail = {"tool": rule.tool or "any", "tier": rule.tier, "enabled": rule.enabled} if change != "deleted" else {}
    audit_record(
        network_id=rule.network_id,
        action=AuditEntry.Action.APPROVAL_RULE_CHANGED,
        actor=actor_label(request),
        target=f"approval rule {rule.name}",
        change=change,
        **detail,
    )


class ApprovalRuleForm(forms.ModelForm):
    """A rule's tool is one of the tools whose spec says `gateable` (as on the dashboard's form)."""

    tool = forms.ChoiceField(
        choices=lambda: [("", "---------"), *tool_choices()],
        required=False,
        help_text=ApprovalRule._meta.get_field("tool").help_text,
    )


@admin.register(ApprovalRule)
class ApprovalRuleAdmin(admin.ModelAdmin):
    form = ApprovalRuleForm
    list_display = ["name", "network", "tool", "tier", "enabled"]
    list_filter = ["enabled", "tier", "tool", "network"]
    search_fields = ["name", "target_alias"]
    autocomplete_fields = ["network", "sender_token"]
    filter_horizontal = ["trusted_tokens"]
    readonly_fields = ["created_by", "created_at"]

    def save_model(self, request: HttpRequest, obj: ApprovalRule, form: forms.ModelForm, change: bool) -> None:
        if not change:
            obj.created_by = actor_label(request)
        super().save_model(request, obj, form, change)  # in the admin's transaction, with this record
        _audit_rule(request, obj, "changed" if change else "created")

    def delete_model(self, request: HttpRequest, obj: ApprovalRule) -> None:
        with transaction.atomic():
            _audit_rule(request, obj, "deleted")
            super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ApprovalRule]) -> None:
        with transaction.atomic():
            for rule in queryset:
                self.delete_model(request, rule)


class ApprovalVoteInline(admin.TabularInline):
    model = ApprovalVote
    extra = 0
    can_delete = False
    fields = ["approver_label", "decision", "note", "created_at"]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Approval | None = None) -> bool:
        return False


@admin.register(Approval)
class ApprovalAdmin(admin.ModelAdmin):
    """Read-only. Deleting stays allowed: a network's deletion takes its approvals with it."""

    list_display = ["id", "tool", "status", "requester_label", "network", "created_at", "decided_at"]
    list_filter = ["status", "tool", "network"]
    search_fields = ["id", "summary", "requester_label"]
    date_hierarchy = "created_at"
    inlines = [ApprovalVoteInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Approval | None = None) -> bool:
        return False
