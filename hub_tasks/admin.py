from __future__ import annotations

from django.contrib import admin

from hub_tasks.models import Budget, Cap, Completion, InboxMessage, Task, TaskAttempt, TaskEvent


class TaskEventInline(admin.TabularInline):
    model = TaskEvent
    extra = 0
    can_delete = False
    readonly_fields = ["from_status", "to_status", "actor", "detail", "created_at"]

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class TaskAttemptInline(admin.TabularInline):
    model = TaskAttempt
    extra = 0
    can_delete = False
    readonly_fields = [
        "number", "alias", "delivered_at", "acked_at", "started_at", "ended_at", "outcome", "result", "ended_by",
    ]  # fmt: skip

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class ReadOnlyAdmin(admin.ModelAdmin):
    """Tasks change only through the services (retry, cancel, reassign), never by editing rows."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Task)
class TaskAdmin(ReadOnlyAdmin):
    list_display = ["task_id", "to_name", "from_name", "status", "priority", "created_at", "network"]
    list_filter = ["status", "priority", "network"]
    search_fields = ["task_id", "to_name", "from_name", "content"]
    inlines = [TaskAttemptInline, TaskEventInline]


@admin.register(InboxMessage)
class InboxMessageAdmin(ReadOnlyAdmin):
    list_display = ["id", "to_alias", "type", "priority", "from_session", "created_at", "acked_at"]
    list_filter = ["type", "priority", "network"]
    search_fields = ["id", "to_alias", "content"]


@admin.register(Completion)
class CompletionAdmin(ReadOnlyAdmin):
    list_display = ["session_name", "task_text", "score", "duration_minutes", "completed_at", "network"]
    search_fields = ["session_name", "task_text"]


@admin.register(Cap)
class CapAdmin(ReadOnlyAdmin):
    """Caps change through cap_set and cap_delete (audited, releasing what waits), never here."""

    list_display = ["id", "network", "scope", "value", "limit", "created_by", "updated_at"]
    list_filter = ["scope", "network"]

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Budget)
class BudgetAdmin(ReadOnlyAdmin):
    """Budgets change through budget_set and budget_delete (audited, releasing what waits), never here."""

    list_display = ["id", "network", "alias", "period", "limit_usd", "limit_tokens", "on_limit", "reached_for"]
    list_filter = ["period", "on_limit", "network"]

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
