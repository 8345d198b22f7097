"""The admin: webhook subscriptions (the secret never shown: it was shown once, at creation) and
their deliveries, read-only (a delivery is a record of what happened)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest

from hub_agents.admin import actor_label
from hub_core.errors import HubError
from hub_webhooks.models import Delivery, Subscription
from hub_webhooks.services import webhook_remove, webhook_switch


class DeliveryInline(admin.TabularInline):
    model = Delivery
    fields = ["created_at", "event_seq", "event_type", "attempt", "outcome", "status_code", "error", "duration_ms"]
    readonly_fields = fields
    ordering = ["-id"]
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = True

    def get_queryset(self, request: HttpRequest):  # type: ignore[no-untyped-def]
        return super().get_queryset(request).order_by("-id")


@admin.register(Subscription)
class SubscriptionAdmin(admin.ModelAdmin):
    list_display = ["id", "url", "network", "state", "cursor", "failing_since", "last_delivered_at"]
    list_filter = ["state", "network"]
    search_fields = ["url", "alias"]
    # Created on the dashboard (where the secret is shown once); here only switched on or off.
    fields = [
        "network",
        "url",
        "event_types",
        "alias",
        "state",
        "disabled_reason",
        "cursor",
        "attempts",
        "next_attempt_at",
        "failing_since",
        "last_delivered_at",
        "lease_owner",
        "lease_until",
        "created_by",
        "created_at",
    ]
    readonly_fields = [name for name in fields if name != "state"]

    inlines = [DeliveryInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Subscription, form: ModelForm, change: bool) -> None:
        # Only the state is editable: switched through the service, so it is audited and the retry
        # state cleared as on the dashboard.
        if "state" in form.changed_data:
            try:
                webhook_switch(
                    subscription_id=obj.pk, active=obj.state == Subscription.State.ACTIVE, by=actor_label(request)
                )
            except HubError as refusal:
                messages.error(request, refusal.message)

    def delete_model(self, request: HttpRequest, obj: Subscription) -> None:
        webhook_remove(subscription_id=obj.pk, by=actor_label(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Subscription]) -> None:
        for subscription_id in queryset.values_list("pk", flat=True):
            webhook_remove(subscription_id=subscription_id, by=actor_label(request))


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["id", "subscription", "event_seq", "event_type", "attempt", "outcome", "status_code", "created_at"]
    list_filter = ["outcome"]
    list_select_related = ["subscription"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
