"""The Limits page ("Caps and budgets"): what holds a network's work back, one section each, for
everyone in it; the forms and buttons that change them for its owners and admins. Every write goes
through the tool registry (cap_set, cap_delete, budget_set, budget_delete), the same door as MCP's
and REST's.

A section is a template (dashboard/_caps.html, _budgets.html) given its rows and its form by one
function here (_caps, _budgets); _page renders them all, with the form a failed POST sends back in
place of a fresh one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from hub_core import validate
from hub_core.errors import HubError
from hub_dashboard.budgets import HOLDS, PERIODS, budget_shown, budgets_shown
from hub_dashboard.views import Desk
from hub_dashboard.wording import refusal_for_operator
from hub_tasks import limits
from hub_tasks.models import BudgetPeriod, CapScope, OnLimit
from hub_tools.cap_tools import LIMIT_MAX
from hub_tools.tools import invoke

# Each scope's name in the table, and what it counts, in the form's choices.
SCOPES = {
    CapScope.ALL: ("network", "every run in the network"),
    CapScope.RUNTIME: ("runtime", "the runs of one runtime"),
    CapScope.SKILL: ("skill", "the tasks needing one skill"),
}


class CapForm(forms.Form):
    scope = forms.ChoiceField(
        choices=[(scope, f"{name.capitalize()}: {counts}") for scope, (name, counts) in SCOPES.items()],
        initial=CapScope.ALL,
    )
    value = forms.CharField(
        label="Runtime or skill",
        max_length=validate.ID_MAX,
        required=False,
        help_text="claude, codex, command, or a skill tasks require; empty for the network.",
    )
    limit = forms.IntegerField(
        min_value=1, max_value=LIMIT_MAX, help_text="Tasks of the scope with their agents at once."
    )

    section, kind = "caps", "cap"  # its section's anchor, and _page's argument

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, auto_id="cap-%s", **kwargs)  # ids apart from the other sections' forms

    def arguments(self) -> dict[str, Any]:
        """cap_set's arguments: what was filled in."""
        return {name: value for name, value in self.cleaned_data.items() if value not in (None, "")}


def _caps(desk: Desk, form: CapForm | None = None) -> dict[str, Any]:
    """The caps section's context: the caps with their slots and waiters, and (for owners and
    admins) the form."""
    caps = invoke("cap_list", desk.actor, {"network_id": desk.network_id})
    for cap in caps:
        cap["scope_name"], cap["counts"] = SCOPES[cap["scope"]]
        cap["full"] = cap["used"] >= cap["limit"]
    return {"caps": caps, "cap_form": form or CapForm()}


class BudgetForm(forms.Form):
    alias = forms.CharField(
        label="Agent",
        max_length=validate.ID_MAX,
        required=False,
        help_text="The agent it counts; empty for the whole network.",
    )
    period = forms.ChoiceField(
        choices=[
            (period, f"{PERIODS[period][0].capitalize()} ({PERIODS[period][1]})") for period in BudgetPeriod.values
        ],
        initial=BudgetPeriod.DAY,
    )
    limit_usd = forms.FloatField(
        label="Limit, USD",
        min_value=limits.BUDGET_USD_MIN,
        max_value=limits.COST_MAX,
        required=False,
        help_text="Reported cost per period.",
    )
    limit_tokens = forms.IntegerField(
        label="Limit, tokens",
        min_value=1,
        max_value=limits.TOKENS_MAX,
        required=False,
        help_text="Tokens in and out per period.",
    )
    on_limit = forms.ChoiceField(
        label="At the limit",
        choices=[(choice, HOLDS[choice].capitalize()) for choice in OnLimit.values],
        initial=OnLimit.HOLD,
        help_text="Waiting tasks are delivered once it is raised or the period turns.",
    )

    section, kind = "budgets", "budget"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, auto_id="budget-%s", **kwargs)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        # budget_set refuses it too; here it is said where the limits are typed.
        if not self.errors and cleaned.get("limit_usd") is None and cleaned.get("limit_tokens") is None:
            self.add_error("limit_usd", "Give a limit in USD, in tokens, or both.")
        return cleaned

    def arguments(self) -> dict[str, Any]:
        """budget_set's arguments: what was filled in."""
        return {name: value for name, value in self.cleaned_data.items() if value not in (None, "")}


def _budgets(desk: Desk, form: BudgetForm | None = None) -> dict[str, Any]:
    """The budgets section's context: each budget with its spend, state and waiters, and (for owners
    and admins) the form."""
    return {"budgets": budgets_shown(desk.actor, desk.network_id), "budget_form": form or BudgetForm()}


def _page(
    request: HttpRequest,
    desk: Desk,
    *,
    status: int = 200,
    cap_form: CapForm | None = None,
    budget_form: BudgetForm | None = None,
) -> HttpResponse:
    # Under Nodes (its header links here): the top bar has no room for one more.
    context = desk.context(**_caps(desk, cap_form), **_budgets(desk, budget_form), section="nodes", live=True)
    return render(request, "dashboard/limits.html", context, status=status)


@login_required
def limits_page(request: HttpRequest) -> HttpResponse:
    desk = Desk(request)
    if desk.network_id is None:
        return render(request, "dashboard/no_network.html", desk.context())
    if request.GET.get("fragment") == "caps":  # a run began or ended: the caps' table alone
        return render(request, "dashboard/_cap_list.html", desk.context(**_caps(desk)))
    if request.GET.get("fragment") == "budgets":  # usage reported or a budget changed: the budgets alone
        return render(request, "dashboard/_budget_list.html", desk.context(**_budgets(desk)))
    return _page(request, desk)


def _set(request: HttpRequest, form: CapForm | BudgetForm, tool: str, said: Callable[[Any], str]) -> HttpResponse:
    """A section's form sent: its tool called (said(result) is the notice, and the page reopens at the
    section), or the page again with the form, the refusal on its field, and a 400."""
    desk = Desk(request)
    if desk.network_id is None:
        return render(request, "dashboard/no_network.html", desk.context())
    if form.is_valid():
        try:
            result = invoke(tool, desk.actor, {**form.arguments(), "network_id": desk.network_id})
        except HubError as refusal:
            shown = refusal_for_operator(refusal)
            form.add_error(shown.field if shown.field in form.fields else None, shown.text)
        else:
            messages.success(request, said(result))
            return redirect(reverse("dashboard:limits") + f"#{form.section}")
    return _page(request, desk, status=400, **{f"{form.kind}_form": form})


def _delete(request: HttpRequest, tool: str, arguments: dict[str, str], section: str, said: str) -> HttpResponse:
    desk = Desk(request)
    try:
        invoke(tool, desk.actor, arguments)
    except HubError as refusal:
        messages.error(request, refusal_for_operator(refusal).text)
    else:
        messages.success(request, said)
    return redirect(reverse("dashboard:limits") + f"#{section}")


def _cap_said(cap: dict[str, Any]) -> str:
    what = SCOPES[cap["scope"]][0] + (f" {cap['value']}" if cap["value"] else "")
    return f"Cap set: {what}, at most {cap['limit']} at once ({cap['used']} now)."


def _budget_said(row: dict[str, Any]) -> str:
    budget = budget_shown(row)
    return (
        f"Budget set: {budget['scope_name']}, {budget['per']}: {budget['spent_text']} spent ({budget['state']}); "
        f"at the limit {budget['holds']}."
    )


@login_required
@require_POST
def cap_set_action(request: HttpRequest) -> HttpResponse:
    return _set(request, CapForm(request.POST), "cap_set", _cap_said)


@login_required
@require_POST
def cap_delete_action(request: HttpRequest, cap_id: str) -> HttpResponse:
    said = "Cap deleted: the tasks that waited for it go ahead, unless another cap holds them."
    return _delete(request, "cap_delete", {"cap_id": cap_id}, "caps", said)


@login_required
@require_POST
def budget_set_action(request: HttpRequest) -> HttpResponse:
    return _set(request, BudgetForm(request.POST), "budget_set", _budget_said)


@login_required
@require_POST
def budget_delete_action(request: HttpRequest, budget_id: str) -> HttpResponse:
    said = "Budget deleted: the tasks that waited for it go ahead, unless another budget or a cap holds them."
    return _delete(request, "budget_delete", {"budget_id": budget_id}, "budgets", said)
