"""The webhooks pages (Django's test client): owners and admins list, add (the secret shown once),
test, disable, enable and delete webhooks and read their deliveries, every change audited; members
and viewers get a 403 and no link."""

from __future__ import annotations

import re

import pytest

from hub_agents.models import AuditEntry
from hub_webhooks.models import Delivery, Subscription
from tests.helpers.dashboard import text

pytestmark = pytest.mark.django_db


def add(browser, url: str, **fields) -> object:
    return browser.post("/webhooks/", {"url": url, **fields})


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_an_admin_adds_a_webhook_and_sees_its_secret_once(login, network, receiver, role):
    browser = login(role)
    reply = add(browser, receiver.url, event_types=["new_task", "task_updated"], alias="coder")

    assert reply.status_code == 201
    secret = re.search(r"whsec_[\w-]+", text(reply)).group(0)
    subscription = Subscription.objects.get()
    assert subscription.secret == secret and subscription.event_types == ["new_task", "task_updated"]
    assert subscription.alias == "coder" and subscription.created_by == "user:operator"
    listing = text(browser.get("/webhooks/"))
    assert receiver.url in listing and "active" in listing
    assert secret not in listing and secret not in text(browser.get(f"/webhooks/{subscription.pk}/"))
    audit = AuditEntry.objects.get(action=AuditEntry.Action.WEBHOOK_CREATED)
    assert secret not in str(audit.detail) and receiver.url in audit.target


def test_the_page_that_shows_the_secret_is_never_cached(login, network, receiver):
    """As the admin's new-token page: the one answer holding the raw secret must stay in no cache."""
    browser = login("owner")

    reply = add(browser, receiver.url)

    assert reply.status_code == 201 and "whsec_" in text(reply)
    assert "no-store" in {part.strip() for part in reply.get("Cache-Control", "").split(",")}


def test_a_private_url_is_refused_on_the_form(login, network):
    reply = add(login("owner"), "http://127.0.0.1:8000/hook")
    assert reply.status_code == 400
    assert "loopback address" in text(reply) and "COMMHUB_WEBHOOKS_ALLOW_PRIVATE" in text(reply)
    assert not Subscription.objects.exists()


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_members_and_viewers_see_no_webhooks(login, network, receiver, make_actor, role):
    from hub_webhooks.services import webhook_create

    subscription, _ = webhook_create(
        actor=make_actor(network, "owner"), network_id=network.id, url=receiver.url, event_types=[]
    )
    browser = login(role)
    assert browser.get("/webhooks/").status_code == 403
    assert browser.get(f"/webhooks/{subscription.pk}/").status_code == 403
    assert add(browser, "https://93.184.215.14/").status_code == 403
    browser.post(f"/webhooks/{subscription.pk}/delete/")
    browser.post(f"/webhooks/{subscription.pk}/disable/")
    assert Subscription.objects.get().state == Subscription.State.ACTIVE
    assert "/webhooks/" not in text(browser.get("/audit/")) and "/webhooks/" not in text(browser.get("/fleet/"))


def test_test_event_disable_enable_delete(login, network, receiver):
    browser = login("owner")
    secret = re.search(r"whsec_[\w-]+", text(add(browser, receiver.url))).group(0)
    receiver.secret = secret
    subscription = Subscription.objects.get()
    page = f"/webhooks/{subscription.pk}/"
    assert "/webhooks/" in text(browser.get("/fleet/"))  # the nav link

    reply = browser.post(f"{page}test/", follow=True)
    assert "Test event sent: HTTP 200" in text(reply)
    (got,) = receiver.snapshot()
    assert (
        got.signed and got.event_type == "webhook_test" and got.frame["payload"]["subscription_id"] == subscription.pk
    )
    assert got.event_id.startswith(f"{network.id}:test-")
    delivery = Delivery.objects.get()
    assert delivery.event_type == "webhook_test" and delivery.status_code == 200
    assert '{"thanks": true}' in text(browser.get(page)).replace("&quot;", '"')
    assert Subscription.objects.get().cursor == subscription.cursor  # a test moves nothing

    browser.post(f"{page}disable/")
    assert Subscription.objects.get().state == Subscription.State.DISABLED
    assert "Disabled by user:operator" in text(browser.get(page))
    browser.post(f"{page}enable/")
    assert Subscription.objects.get().state == Subscription.State.ACTIVE
    browser.post(f"{page}delete/")
    assert not Subscription.objects.exists() and not Delivery.objects.exists()
    changes = AuditEntry.objects.filter(action__startswith="webhook.").order_by("id")
    assert [(e.action, e.detail.get("change")) for e in changes] == [
        ("webhook.created", None),
        ("webhook.changed", "disabled"),
        ("webhook.changed", "enabled"),
        ("webhook.deleted", None),
    ]
    assert browser.get(page).status_code == 404


def test_the_deliveries_page_shows_failures_and_why_it_was_disabled(login, network, make_actor):
    from django.utils import timezone

    owner = make_actor(network, "owner")
    subscription = Subscription.objects.create(
        network=network, url="https://93.184.215.14/hook", secret="whsec_x", created_by=owner.label,
        state=Subscription.State.DISABLED, disabled_reason="Failing since yesterday; disabled after a day of retries.",
        failing_since=timezone.now(), attempts=30,
    )  # fmt: skip
    Delivery.objects.create(
        subscription=subscription, event_seq=7, event_type="new_task", attempt=30,
        outcome=Delivery.Outcome.FAILED, status_code=502, response_excerpt="bad gateway",
    )  # fmt: skip
    page = text(login("admin").get(f"/webhooks/{subscription.pk}/"))
    assert "disabled after a day of retries" in page and "HTTP 502" in page and "bad gateway" in page
    assert "#7" in page and 'name="enable"' in page
