"""The dashboard's forms. The login form shows a failed-login lockout (commhub.login_guard refuses
with HubError("login_locked")) as the form's error, naming the wait; the admin's login form reuses
the same mixin."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.forms import AuthenticationForm

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
