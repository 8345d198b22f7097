"""The dashboard's forms. The login form shows a failed-login lockout (commhub.login_guard refuses
with HubError("login_locked")) as the form's error, naming the wait; the admin's login form reuses
the same mixin."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.forms import AuthenticationForm

from hub_agents.models import ApiToken
from hub_approvals.models import ApprovalRule
from hub_approvals.port import tool_choices
from hub_core.errors import HubError


class LockoutMessage(forms.Form):
    """Shows a lockout as the form's error, with the wait; `retry_after` is set while locked."""

    retry_after: int | None = None

    def clean(self) -> dict[str, Any]:
        try:
            return super().clean()
        except HubError as error:
            if error.code != "login_locked":
                raise
            self.retry_after = error.extra["retry_after"]
            raise forms.ValidationError(error.message, code="login_locked") from None


class LoginForm(LockoutMessage, AuthenticationForm):
    """The dashboard's login form."""


class ApprovalRuleForm(forms.ModelForm):
    """An approval rule of one network (the approvals page): its tokens only to choose from, and the
    model's own checks (the timeout's range, the sender token's network) run by the form's validation.
    Its tool is one of the tools whose spec says `gateable` (the admin's form offers the same)."""

    tool = forms.ChoiceField(
        choices=tool_choices, required=False, help_text=ApprovalRule._meta.get_field("tool").help_text
    )

    class Meta:
        model = ApprovalRule
        fields = [
            "name",
            "tool",
            "target_alias",
            "min_priority",
            "sender_token",
            "sender_role",
            "tier",
            "trusted_tokens",
            "trust_admins",
            "timeout_seconds",
            "enabled",
        ]
        widgets = {"trusted_tokens": forms.CheckboxSelectMultiple}
        labels = {
            "target_alias": "Addressed to",
            "min_priority": "Priority at least",
            "sender_token": "Made with token",
            "sender_role": "By callers with role",
            "tier": "Approvers needed",
            "trusted_tokens": "Trusted tokens: their calls are approved at once",
            "trust_admins": "Trust the network's owners and admins: their calls are approved at once",
            "timeout_seconds": "Timeout (seconds)",
        }

    def __init__(self, *args: Any, network_id: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Before validation: the model's clean() compares the sender token's network with the rule's.
        self.instance.network_id = network_id
        tokens = ApiToken.objects.filter(network_id=network_id, revoked_at__isnull=True).order_by("name", "pk")
        self.fields["sender_token"].queryset = tokens
        self.fields["trusted_tokens"].queryset = tokens
        self.fields["sender_token"].empty_label = "any token"
        for name, anything in (("tool", "any tool a rule may hold"), ("min_priority", "any"), ("sender_role", "any")):
            choices = [choice for choice in self.fields[name].choices if choice[0] != ""]
            self.fields[name].choices = [("", anything), *choices]
