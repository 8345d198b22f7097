"""The admin: subscriptions listed without their secret, switched on and off and deleted through
the services (audited), deliveries read-only."""

from __future__ import annotations

import pytest

from hub_agents.models import AuditEntry
from hub_webhooks.models import Delivery, Subscription
from hub_webhooks.services import webhook_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def subscription(owner, network) -> Subscription:
    return webhook_create(actor=owner, network_id=network.id, url="https://93.184.215.14/hook", event_types=[])[0]


def test_the_secret_is_never_shown(admin_client, subscription):
    for page in ("/admin/hub_webhooks/subscription/", f"/admin/hub_webhooks/subscription/{subscription.pk}/change/"):
        reply = admin_client.get(page)
        assert reply.status_code == 200 and "93.184.215.14" in reply.content.decode()
        assert subscription.secret not in reply.content.decode()


def test_switching_and_deleting_in_the_admin_is_audited(admin_client, subscription):
    change = f"/admin/hub_webhooks/subscription/{subscription.pk}/change/"
    reply = admin_client.post(change, {"state": "disabled", "deliveries-TOTAL_FORMS": "0",
                                       "deliveries-INITIAL_FORMS": "0"})  # fmt: skip
    assert reply.status_code == 302
    assert Subscription.objects.get().state == Subscription.State.DISABLED
    assert AuditEntry.objects.filter(action=AuditEntry.Action.WEBHOOK_CHANGED, actor="user:admin").exists()

    reply = admin_client.post(f"/admin/hub_webhooks/subscription/{subscription.pk}/delete/", {"post": "yes"})
    assert reply.status_code == 302 and not Subscription.objects.exists()
    assert AuditEntry.objects.filter(action=AuditEntry.Action.WEBHOOK_DELETED, actor="user:admin").exists()


def test_deliveries_cannot_be_added_or_changed(admin_client, subscription):
    delivery = Delivery.objects.create(subscription=subscription, event_type="new_task", outcome="failed")
    assert admin_client.get("/admin/hub_webhooks/delivery/add/").status_code == 403
    assert admin_client.get("/admin/hub_webhooks/delivery/").status_code == 200
    page = admin_client.get(f"/admin/hub_webhooks/delivery/{delivery.pk}/change/")
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
