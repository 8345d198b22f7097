"""The dashboard's schedules page: a network's recurring schedules with their latest runs, for
everyone in it; the form for a new one and the pause, resume, run-now and delete buttons for its
owners and admins. Every write goes through the tool registry (schedule_*), as MCP's and REST's do."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from hub_core.errors import HubError
from hub_dashboard.views import Desk
from hub_dashboard.wording import refusal_for_operator
from hub_schedules import models as S
from hub_schedules.models import Missed, Overlap
from hub_tasks.models import Priority
from hub_tools.tools import invoke

# The colour of a run's outcome, in the pills the other pages use.
PILLS = {"sent": "replied", "skipped": "expired", "missed": "cancelled", "failed": "failed"}
ACTIONS = {
    "pause": ("schedule_pause", "Paused: no run until it is resumed."),
    "resume": ("schedule_resume", "Resumed: it runs from its next due time."),
    "run": ("schedule_run_now", "Run now: "),
    "delete": ("schedule_delete", "Schedule deleted; the tasks it sent stay."),
}


class ScheduleForm(forms.Form):
    name = forms.CharField(max_length=S.NAME_MAX, help_text="Unique in the network.")
    task = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), help_text="What each run asks.")
    alias = forms.CharField(max_length=200, required=False, help_text="The agent each run goes to…")
    required_skills = forms.CharField(
        label="Or the pool, by skills", max_length=500, required=False, help_text="Comma-separated."
    )
    cron = forms.CharField(max_length=S.CRON_MAX, required=False, help_text="e.g. 0 2 * * * (daily at 02:00)…")
    interval_seconds = forms.IntegerField(
        label="Or every (seconds)", required=False, min_value=S.INTERVAL_MIN, max_value=S.INTERVAL_MAX
    )
    time_zone = forms.CharField(max_length=64, initial="UTC", help_text="IANA, e.g. Europe/Berlin.")
    missed = forms.ChoiceField(choices=Missed.choices, initial=Missed.CATCH_UP_ONCE, help_text="After downtime.")
    overlap = forms.ChoiceField(choices=Overlap.choices, initial=Overlap.SKIP, help_text="While the last run is open.")
    priority = forms.ChoiceField(choices=Priority.choices, initial=Priority.NORMAL)

    def arguments(self) -> dict[str, Any]:
        """schedule_create's arguments: what was filled in."""
        given = {name: value for name, value in self.cleaned_data.items() if value not in (None, "")}
        if "required_skills" in given:
            given["required_skills"] = [skill.strip() for skill in given["required_skills"].split(",") if skill.strip()]
        return given


@login_required
def schedules_page(request: HttpRequest) -> HttpResponse:
    """The list, and (owners and admins) the form for a new schedule, POSTed here."""
    desk = Desk(request)
    if desk.network_id is None:
        return render(request, "dashboard/no_network.html", desk.context())
    form = ScheduleForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                created = invoke("schedule_create", desk.actor, {**form.arguments(), "network_id": desk.network_id})
            except HubError as refusal:
                shown = refusal_for_operator(refusal)
                form.add_error(shown.field if shown.field in form.fields else None, shown.text)
            else:
                messages.success(request, f"Schedule “{created.name}” created.")
                return redirect("dashboard:schedules")
        status = 400
    rows = invoke("schedule_list", desk.actor, {"network_id": desk.network_id, "limit": 100})
    for row in rows:
        for run in row["runs"]:
            run["pill"] = PILLS[run["outcome"]]
    # Under Tasks in the nav (its page and Dispatch link here): the top bar has no room for one more.
    context = {"schedules": rows, "form": form, "section": "tasks"}
    return render(request, "dashboard/schedules.html", desk.context(**context), status=status)


@login_required
@require_POST
def schedule_action(request: HttpRequest, schedule_id: str, action: str) -> HttpResponse:
    desk = Desk(request)
    if action not in ACTIONS:
        return render(request, "dashboard/not_found.html", desk.context(message="No such action."), status=404)
    tool, done = ACTIONS[action]
    try:
        answer = invoke(tool, desk.actor, {"schedule_id": schedule_id})
    except HubError as refusal:
        messages.error(request, refusal_for_operator(refusal).text)
    else:
        if action == "run":
            done += f"task {answer.task_id} sent." if answer.task_id else f"{answer.outcome}: {answer.reason}"
        messages.success(request, done)
    return redirect("dashboard:schedules")
