"""The dashboard's webhooks pages: a network's outbound webhook subscriptions, made, switched on
and off, deleted and tested by its owners and admins (through hub_webhooks' services, as the admin
does), and each one's deliveries. Viewers and members get a 403, as on the other admin pages."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from hub_core.errors import HubError
from hub_core.events import EventType
from hub_dashboard.views import Desk, admins_only
from hub_dashboard.wording import refusal_for_operator
from hub_webhooks.models import Delivery, Subscription
from hub_webhooks.selectors import webhook_deliveries, webhook_get, webhook_subscriptions
from hub_webhooks.services import webhook_create, webhook_delete, webhook_send_test, webhook_set_active

# The colour of a state or an outcome, in the pills the other pages use.
PILLS = {
    Subscription.State.ACTIVE: "replied",
    Subscription.State.DISABLED: "failed",
    Delivery.Outcome.DELIVERED: "replied",
    Delivery.Outcome.FAILED: "failed",
    Delivery.Outcome.REFUSED: "failed",
    Delivery.Outcome.SKIPPED: "expired",
    Delivery.Outcome.DISABLED: "cancelled",
}
ADMINS_ONLY = "Only the network's owners and admins see and manage its webhooks."


class WebhookForm(forms.Form):
    url = forms.CharField(
        label="URL", max_length=2000, help_text="http:// or https://; each event is POSTed here as JSON, signed."
    )
    event_types = forms.MultipleChoiceField(
        label="Event types",
        choices=[(str(kind), str(kind)) for kind in EventType],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every type.",
    )
    alias = forms.CharField(
        label="Only events concerning alias", max_length=200, required=False, help_text="Blank: every event."
    )


@login_required
def webhooks_page(request: HttpRequest) -> HttpResponse:
    """The list and the form for a new one (POSTed here: on success the page shows the secret, once)."""
    desk = Desk(request)
    if refusal := admins_only(request, desk, ADMINS_ONLY):
        return refusal
    form = WebhookForm(request.POST or None)
    created, secret, status = None, "", 200
    if request.method == "POST":
        if form.is_valid():
            try:
                created, secret = webhook_create(actor=desk.actor, network_id=desk.network_id, **form.cleaned_data)
            except HubError as refusal:
                if refusal.extra.get("field") == "url":
                    form.add_error("url", f"This URL {refusal.error.removeprefix('url: ')}.")
                else:
                    shown = refusal_for_operator(refusal)
                    form.add_error(shown.field if shown.field in form.fields else None, shown.text)
            else:
                form = WebhookForm()
        status = 400 if form.errors else 201
    subscriptions = list(webhook_subscriptions(actor=desk.actor, network_id=desk.network_id))
    for subscription in subscriptions:
        subscription.pill = PILLS[subscription.state]
    context = {"subscriptions": subscriptions, "form": form, "created": created, "secret": secret}
    response = render(request, "dashboard/webhooks.html", desk.context(section="webhooks", **context), status=status)
    if secret:
        response["Cache-Control"] = "no-store"  # the raw secret must not stay in any cache (as a new token)
    return response


@login_required
def webhook_page(request: HttpRequest, subscription_id: int) -> HttpResponse:
    """One subscription's deliveries, newest first: every attempt with its answer, and the notes."""
    desk = Desk(request)
    if refusal := admins_only(request, desk, ADMINS_ONLY):
        return refusal
    try:
        subscription = webhook_get(actor=desk.actor, network_id=desk.network_id, subscription_id=subscription_id)
    except HubError as refusal:
        return render(request, "dashboard/not_found.html", desk.context(message=refusal.message), status=404)
    deliveries = webhook_deliveries(subscription=subscription)
    for delivery in deliveries:
        delivery.pill = PILLS[delivery.outcome]
    subscription.pill = PILLS[subscription.state]
    context = {"subscription": subscription, "deliveries": deliveries, "section": "webhooks"}
    return render(request, "dashboard/webhook.html", desk.context(**context))


@login_required
@require_POST
def webhook_action(request: HttpRequest, subscription_id: int, action: str) -> HttpResponse:
    desk = Desk(request)
    back = reverse("dashboard:webhook", args=[subscription_id])
    try:
        if action == "enable":
            webhook_set_active(actor=desk.actor, subscription_id=subscription_id, active=True)
            messages.success(request, "Enabled: it resumes from the first event it has not delivered.")
        elif action == "disable":
            webhook_set_active(actor=desk.actor, subscription_id=subscription_id, active=False)
            messages.success(request, "Disabled: events wait in the log (for its retention) until it is enabled.")
        elif action == "delete":
            webhook_delete(actor=desk.actor, subscription_id=subscription_id)
            messages.success(request, "Webhook deleted, with its deliveries.")
            back = reverse("dashboard:webhooks")
        elif action == "test":
            sent = webhook_send_test(actor=desk.actor, subscription_id=subscription_id)
            answer = f"HTTP {sent.status_code}" if sent.status_code is not None else sent.error
            level = messages.SUCCESS if sent.outcome == Delivery.Outcome.DELIVERED else messages.ERROR
            messages.add_message(request, level, f"Test event sent: {answer}.")
        else:
            return render(request, "dashboard/not_found.html", desk.context(message="No such action."), status=404)
    except HubError as refusal:
        messages.error(request, refusal_for_operator(refusal).text)
        if refusal.status == 404:
            back = reverse("dashboard:webhooks")
    return redirect(back)
