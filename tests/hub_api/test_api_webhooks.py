"""Webhooks over REST (issue 24): a network's owners and admins list, create (the secret shown once,
never cached), enable, disable and delete webhooks and read their deliveries, with the dashboard's
checks (roles, networks, the SSRF rules) and its audit rows."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client

from hub_agents.models import AuditEntry, Network
from hub_agents.services import membership_set, token_create, user_get_or_create
from hub_webhooks.models import Delivery, Subscription
from hub_webhooks.send import webhook_client
from hub_webhooks.services import SUBSCRIPTIONS_MAX, webhooks_deliver
from tests.helpers.calls import send_task
from tests.helpers.mcp import LATEST, rpc
from tests.helpers.rest import API, Api, assert_refused

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(client: Client, network: Network) -> Api:
    return Api(client, network, "admin")


def created(api: Api, url: str, **fields: Any) -> dict[str, Any]:
    response = api.post("webhooks", {"url": url, **fields})
    assert response.status_code == 201, response.content
    return response.json()


def audited() -> list[tuple[str, Any]]:
    entries = AuditEntry.objects.filter(action__startswith="webhook.").order_by("id")
    return [(entry.action, entry.detail.get("change")) for entry in entries]


def test_an_admin_creates_a_webhook_and_sees_its_secret_once_in_an_answer_never_cached(admin, receiver, network):
    response = admin.post("webhooks", {"url": receiver.url, "event_types": ["new_task"], "alias": "coder"})

    assert response.status_code == 201, response.content
    assert "no-store" in response["Cache-Control"]
    body = response.json()
    subscription = Subscription.objects.get()
    assert re.fullmatch(r"whsec_[\w-]+", body["secret"]) and body["secret"] == subscription.secret
    assert body | {"created_at": None} == {
        "ok": True,
        "webhook_id": subscription.pk,
        "network_id": network.pk,
        "url": receiver.url,
        "event_types": ["new_task"],
        "alias": "coder",
        "state": "active",
        "disabled_reason": None,
        "cursor": subscription.cursor,
        "attempts": 0,
        "next_attempt_at": None,
        "failing_since": None,
        "last_delivered_at": None,
        "created_by": "ntok_" + admin.token[5:12] + " (admin-script)",
        "created_at": None,
        "secret": subscription.secret,
    }
    listed = admin.get("webhooks")
    assert listed.status_code == 200
    assert [row["webhook_id"] for row in listed.json()["webhooks"]] == [subscription.pk]
    assert body["secret"] not in listed.content.decode()
    assert body["secret"] not in admin.get(f"webhooks/{subscription.pk}/deliveries").content.decode()
    entry = AuditEntry.objects.get(action=AuditEntry.Action.WEBHOOK_CREATED)
    assert (
        entry.actor == body["created_by"] and receiver.url in entry.target and body["secret"] not in str(entry.detail)
    )


def test_the_webhook_receives_events_signed_with_the_secret_rest_showed(admin, receiver, network, make_actor):
    body = created(admin, receiver.url)
    receiver.secret = body["secret"]
    sent = send_task(actor=make_actor(network, "member"), alias="coder", task="tell the webhook")

    with webhook_client() as http:
        webhooks_deliver(owner="test", client=http)

    first_sent = receiver.snapshot()[0]
    assert (first_sent.event_type, first_sent.signed) == ("new_task", True)
    deliveries = admin.get(f"webhooks/{body['webhook_id']}/deliveries").json()
    assert deliveries["webhook"]["last_delivered_at"] is not None
    first = deliveries["deliveries"][-1]
    assert (first["outcome"], first["status_code"], first["event_type"]) == ("delivered", 200, "new_task")
    assert sent["task_id"] in json.dumps(first_sent.frame)


def test_disable_enable_and_delete_change_it_as_the_dashboard_does_and_are_audited(admin, receiver):
    webhook_id = created(admin, receiver.url)["webhook_id"]

    disabled = admin.post(f"webhooks/{webhook_id}/disable")
    again = admin.post(f"webhooks/{webhook_id}/disable")
    enabled = admin.post(f"webhooks/{webhook_id}/enable")
    deleted = admin.post(f"webhooks/{webhook_id}/delete")

    assert (disabled.status_code, again.status_code, enabled.status_code) == (200, 200, 200)
    assert disabled.json()["state"] == "disabled" and "Disabled by ntok_" in disabled.json()["disabled_reason"]
    assert again.json()["state"] == "disabled"
    assert enabled.json()["state"] == "active" and enabled.json()["disabled_reason"] is None
    assert deleted.status_code == 200 and deleted.json() == {"ok": True, "webhook_id": webhook_id, "deleted": True}
    assert not Subscription.objects.exists()
    assert audited() == [
        ("webhook.created", None),
        ("webhook.changed", "disabled"),
        ("webhook.changed", "enabled"),
        ("webhook.deleted", None),
    ]
    for action in ("enable", "disable", "delete"):
        assert_refused(admin.post(f"webhooks/{webhook_id}/{action}"), 404, "webhook_not_found")
    assert_refused(admin.get(f"webhooks/{webhook_id}/deliveries"), 404, "webhook_not_found")


def test_deliveries_are_newest_first_and_limited(admin, network, make_actor):
    owner = make_actor(network, "owner")
    subscription = Subscription.objects.create(
        network=network, url="https://93.184.215.14/hook", secret="whsec_x", created_by=owner.label
    )
    for seq in range(1, 6):
        Delivery.objects.create(
            subscription=subscription, event_seq=seq, event_type="new_task", outcome="failed", status_code=500
        )

    answer = admin.get(f"webhooks/{subscription.pk}/deliveries", limit=3).json()

    assert [row["event_seq"] for row in answer["deliveries"]] == [5, 4, 3]
    assert answer["webhook"]["webhook_id"] == subscription.pk and "secret" not in answer["webhook"]
    assert_refused(admin.get(f"webhooks/{subscription.pk}/deliveries", limit=0), 400, "invalid_argument", field="limit")


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_members_and_viewers_may_neither_see_nor_change_webhooks(client, network, receiver, admin, role):
    webhook_id = created(admin, receiver.url)["webhook_id"]
    caller = Api(client, network, role)
    before = list(Subscription.objects.values())
    audit_rows = AuditEntry.objects.count()

    refusals = [
        caller.get("webhooks"),
        caller.get("webhooks", network_id=network.pk),
        caller.post("webhooks", {"url": receiver.url}),
        caller.post(f"webhooks/{webhook_id}/disable"),
        caller.post(f"webhooks/{webhook_id}/delete"),
        caller.get(f"webhooks/{webhook_id}/deliveries"),
    ]

    for response in refusals:
        body = assert_refused(response, 403, "permission_denied")
        assert "secret" not in body and receiver.url not in response.content.decode()
    assert list(Subscription.objects.values()) == before and AuditEntry.objects.count() == audit_rows


def test_another_networks_webhooks_are_not_found_and_stay_as_they_were(client, network, other_network, receiver, admin):
    theirs = created(Api(client, other_network, "owner"), receiver.url)["webhook_id"]
    before = list(Subscription.objects.values())

    assert admin.get("webhooks").json()["webhooks"] == []
    assert_refused(admin.get("webhooks", network_id=other_network.pk), 403, "permission_denied")
    assert_refused(
        admin.post("webhooks", {"url": receiver.url, "network_id": other_network.pk}), 403, "permission_denied"
    )
    for action in ("enable", "disable", "delete"):
        assert_refused(admin.post(f"webhooks/{theirs}/{action}"), 404, "webhook_not_found")
    assert_refused(admin.get(f"webhooks/{theirs}/deliveries"), 404, "webhook_not_found")
    assert list(Subscription.objects.values()) == before


def test_a_user_token_lists_the_webhooks_of_the_networks_it_administers_only(client, network, other_network, receiver):
    ours = created(Api(client, network, "admin"), receiver.url)["webhook_id"]
    created(Api(client, other_network, "admin"), receiver.url)
    carol = user_get_or_create(username="carol")
    membership_set(user=carol, network=network, role="owner")
    membership_set(user=carol, network=other_network, role="member")
    headers = {"Authorization": f"Bearer {token_create(user=carol)[1]}"}

    listed = client.get(API + "webhooks", headers=headers)

    assert [row["webhook_id"] for row in listed.json()["webhooks"]] == [ours]
    made = client.post(
        API + "webhooks",
        json.dumps({"url": receiver.url, "network_id": network.pk}),
        content_type="application/json",
        headers=headers,
    )
    assert made.status_code == 201 and made.json()["created_by"] == "user:carol"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "url"),
        ({"url": "ftp://example.com/hook"}, "url"),
        ({"url": "https://user:pw@example.com/hook"}, "url"),
        ({"url": "https://example.com/hook#part"}, "url"),
        ({"url": "https://example.com/" + "x" * 2000}, "url"),
        ({"url": "https://example.com/", "event_types": ["no_such_event"]}, "event_types[0]"),
        ({"url": "https://example.com/", "event_types": ["new_task", "new_task"]}, "event_types"),
        ({"url": "https://example.com/", "alias": "x" * 201}, "alias"),
        ({"url": "https://example.com/", "secret": "whsec_mine"}, "secret"),
    ],
)
def test_a_body_outside_the_schema_is_a_400_naming_the_field(admin, body, field):
    assert_refused(admin.post("webhooks", body), 400, "invalid_argument", field=field)
    assert not Subscription.objects.exists()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://127.0.0.1:8000/hook", "loopback address"),
        ("https://10.1.2.3/hook", "private address"),
        ("http://169.254.169.254/latest/meta-data/", "which webhooks may not reach"),
        ("http://[::ffff:127.0.0.1]/hook", "loopback address"),
        ("https://no-such-host.invalid/hook", "does not resolve"),
        ("https://example.com:port/hook", "is not a URL"),
    ],
)
def test_a_url_webhooks_may_not_reach_is_a_409_by_the_same_rules_as_the_dashboard(admin, url, says):
    body = assert_refused(admin.post("webhooks", {"url": url}), 409, "invalid_argument", field="url")

    assert says in body["message"]
    assert not Subscription.objects.exists()


def test_a_network_has_at_most_its_limit_of_webhooks(admin, receiver):
    for _ in range(SUBSCRIPTIONS_MAX):
        created(admin, receiver.url)

    assert_refused(admin.post("webhooks", {"url": receiver.url}), 409, "webhook_limit")


def test_a_webhook_id_that_is_not_a_whole_number_is_a_400(admin):
    assert_refused(admin.get("webhooks/abc/deliveries"), 400, "invalid_argument", field="webhook_id")
    assert_refused(admin.post("webhooks/0/enable"), 400, "invalid_argument", field="webhook_id")
    assert_refused(admin.post("webhooks/1/enable", {"webhook_id": 1}), 400, "invalid_argument", field="webhook_id")


def test_webhooks_are_rest_only_not_in_the_agents_mcp_catalogue(client, admin):
    assert admin.get("webhooks").json() == {"ok": True, "webhooks": []}
    listed = rpc(client, "tools/list", {}, token=admin.token, version=LATEST).json()
    called = rpc(client, "tools/call", {"name": "webhook_list", "arguments": {}}, token=admin.token, version=LATEST)

    names = {tool["name"] for tool in listed["result"]["tools"]}
    assert "send_task" in names and not [name for name in names if name.startswith("webhook")]
    assert "webhooks" not in json.dumps(called.json().get("result", {}).get("structuredContent", {}))
    assert "error" in called.json() or called.json()["result"]["isError"] is True
