"""The admin: schedules (created, changed, paused and deleted here like through schedule_* and
audited alike) and their runs, read-only: a run is what the sweep did, never edited."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone

from hub_agents.admin import actor_label
from hub_core.errors import HubError
from hub_schedules.models import Schedule, ScheduleRun
from hub_schedules.services import schedule_audit, schedule_when_check


class ScheduleForm(forms.ModelForm):
    """A cron expression or an interval (not both), in an IANA time zone: what schedule_create checks."""

    class Meta:
        model = Schedule
        exclude: list[str] = []

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        try:
            schedule_when_check(data.get("cron") or None, data.get("interval_seconds"), data.get("time_zone") or "")
        except HubError as refusal:
            raise forms.ValidationError(refusal.message) from None
        return data


class RunInline(admin.TabularInline):
    model = ScheduleRun
    fields = ["due_at", "outcome", "task", "reason", "run_now", "fired_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    form = ScheduleForm
    list_display = ["name", "network", "every", "time_zone", "alias", "paused", "next_run_at"]
    list_filter = ["paused", "missed", "overlap", "network"]
    search_fields = ["name", "alias", "task"]
    autocomplete_fields = ["network"]
    readonly_fields = ["next_run_at", "created_by", "created_at"]
    inlines = [RunInline]

    def save_model(self, request: HttpRequest, obj: Schedule, form: forms.ModelForm, change: bool) -> None:
        if not change:
            obj.created_by = actor_label(request)
            obj.created_at = timezone.now()
        # Its next due time from now, on what it says now (a changed cron or interval, a resume).
        obj.next_run_at = obj.next_due(timezone.now())
        super().save_model(request, obj, form, change)  # in the admin's transaction, with this record
        change_made = "changed" if change else "created"
        schedule_audit(actor_label(request), obj, change_made, every=obj.every, paused=obj.paused)

    def delete_model(self, request: HttpRequest, obj: Schedule) -> None:
        with transaction.atomic():
            schedule_audit(actor_label(request), obj, "deleted")
            super().delete_model(request, obj)


@admin.register(ScheduleRun)
class ScheduleRunAdmin(admin.ModelAdmin):
    list_display = ["schedule", "due_at", "outcome", "task", "run_now"]
    list_filter = ["outcome"]
    list_select_related = ["schedule"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
