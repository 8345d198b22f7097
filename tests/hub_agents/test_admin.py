"""The admin, as a superuser sees it: tokens shown once and revoked (never deleted), networks and their
members changed through the audited services, the audit log read-only, and every page rendering."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.contrib.admin.utils import quote
from django.contrib.auth.models import AbstractBaseUser, Group
from django.test import Client
from django.urls import reverse

from hub_agents.models import ApiToken, AuditEntry, Membership, Network, Node
from hub_agents.services import (
    actor_for_user,
    membership_set,
    token_authenticate,
    token_create,
    token_revoke,
    user_get_or_create,
)
from hub_approvals.models import ApprovalRule
from hub_tasks.models import InboxMessage, Task, TaskEvent
from hub_webhooks.models import Delivery
from hub_webhooks.services import webhook_create
from tests.helpers.calls import (
    broadcast,
    budget_set,
    cancel_task,
    cap_set,
    decide_approval,
    node_command,
    report_completion,
    report_node,
    report_status,
    schedule_create,
    schedule_run_now,
    send_task,
)

MCP_VERSION = "2025-11-25"
# /mcp and /events run their database work on pool threads with connections of their own.
COMMITTED = pytest.mark.django_db(transaction=True)

RAW_ON_PAGE = re.compile(r'id="raw-token" value="([^"]*)"')


@pytest.fixture
def boss(django_user_model: Any) -> AbstractBaseUser:
    return django_user_model.objects.create_superuser("boss", email="boss@example.com")


@pytest.fixture
def staff(client: Client, boss: AbstractBaseUser) -> Client:
    client.force_login(boss)
    return client


def audit(action: str, network: Network | str | None = None) -> list[dict[str, Any]]:
    rows = AuditEntry.objects.filter(action=action).order_by("created_at", "id")
    if network is not None:
        rows = rows.filter(network_id=network if isinstance(network, str) else network.pk)
    return list(rows.values("network_id", "network_name", "actor", "target", "detail"))


def cache_directives(response: Any) -> set[str]:
    return {part.strip() for part in response.get("Cache-Control", "").split(",") if part.strip()}


# --- creating tokens: the raw value shown once ---------------------------------------------------


def add_token(staff: Client, **fields: Any) -> Any:
    form = {"name": "", "network": "", "role": "", "user": "", "_save": "Save", **fields}
    return staff.post(reverse("admin:hub_agents_apitoken_add"), form)


def raw_from(response: Any) -> str:
    assert response.status_code == 200, response.content[:2000]
    found = RAW_ON_PAGE.search(response.content.decode())
    assert found, response.content.decode()[:4000]
    return found.group(1)


def assert_nowhere(staff: Client, token: ApiToken, raw: str) -> None:
    """After the one page that showed it, no admin page shows the raw token or its digest."""
    pages = [
        reverse("admin:hub_agents_apitoken_change", args=[token.pk]),
        reverse("admin:hub_agents_apitoken_changelist"),
        reverse("admin:hub_agents_apitoken_changelist") + f"?q={raw[:12]}",
        reverse("admin:hub_agents_apitoken_history", args=[token.pk]),
        reverse("admin:hub_agents_auditentry_changelist"),
        reverse("admin:index"),
    ]
    for url in pages:
        page = staff.get(url)
        assert page.status_code == 200, url
        body = page.content.decode()
        assert raw not in body and raw[12:] not in body and token.digest not in body, url
    assert raw[:12] in staff.get(pages[0]).content.decode()  # the prefix names it
    assert all(raw not in str(entry.__dict__) for entry in LogEntry.objects.all())


def test_a_network_token_made_in_the_admin_is_shown_once(staff, network):
    response = add_token(staff, name="ci", network=network.pk, role="admin")

    raw = raw_from(response)
    assert raw.startswith("ntok_")
    assert "no-store" in cache_directives(response)
    token = ApiToken.objects.get()
    assert token.digest == ApiToken.digest_of(raw)
    assert (token.kind, token.name, token.network, token.user, token.role, token.prefix) == (
        "ntok",
        "ci",
        network,
        None,
        "admin",
        raw[:12],
    )
    assert token_authenticate(raw=raw).roles == {network.pk: "admin"}
    assert audit("token.created") == [
        {
            "network_id": network.pk,
            "network_name": "alpha",
            "actor": "user:boss",
            "target": f"token {raw[:12]}… (ci)",
            "detail": {"role": "admin"},
        }
    ]
    assert_nowhere(staff, token, raw)


def test_a_network_token_without_a_role_is_a_member(staff, network):
    raw = raw_from(add_token(staff, network=network.pk))

    assert token_authenticate(raw=raw).roles == {network.pk: "member"}


def test_a_user_token_made_in_the_admin_is_shown_once(staff, network, other_network):
    carol = user_get_or_create(username="carol")
    membership_set(user=carol, network=network, role="viewer")
    membership_set(user=carol, network=other_network, role="admin")

    response = add_token(staff, name="laptop", user=carol.pk)

    raw = raw_from(response)
    assert raw.startswith("utok_")
    assert "no-store" in cache_directives(response)
    token = ApiToken.objects.get()
    assert (token.digest, token.kind, token.user, token.network, token.role) == (
        ApiToken.digest_of(raw),
        "utok",
        carol,
        None,
        "",
    )
    assert token_authenticate(raw=raw).label == "user:carol"
    for where in (network, other_network):
        (row,) = audit("token.created", where)
        assert (row["actor"], row["target"]) == ("user:boss", f"token {raw[:12]}… (laptop) of user carol")
    assert_nowhere(staff, token, raw)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (lambda net, user: {"network": net.pk, "user": user.pk}, "Choose a network (for a network token) or a user"),
        (lambda net, user: {}, "Choose a network (for a network token) or a user"),
        (lambda net, user: {"user": user.pk, "role": "admin"}, "A user token has the user&#x27;s roles"),
        (lambda net, user: {"network": net.pk, "role": "overlord"}, "Select a valid choice"),
        (lambda net, user: {"network": net.pk, "name": "x" * 201}, "name"),
    ],
    ids=["both", "neither", "role-with-user", "unknown-role", "name-too-long"],
)
def test_invalid_token_forms_are_form_errors_and_create_nothing(staff, network, fields, message):
    carol = user_get_or_create(username="carol")
    membership_set(user=carol, network=network)

    response = add_token(staff, **fields(network, carol))

    assert response.status_code == 200
    body = response.content.decode()
    assert "errornote" in body and message in body
    assert not RAW_ON_PAGE.search(body)
    assert not ApiToken.objects.exists()
    assert audit("token.created") == []


def test_the_add_form_offers_name_network_role_and_user_only(staff, network):
    body = staff.get(reverse("admin:hub_agents_apitoken_add")).content.decode()

    for field in ("name", "network", "role", "user"):
        assert f'name="{field}"' in body
    for field in ("digest", "prefix", "kind", "revoked_at"):
        assert f'name="{field}"' not in body


def test_the_change_page_edits_only_the_name(staff, network):
    token, raw = token_create(network=network, role="viewer", name="old")

    response = staff.post(
        reverse("admin:hub_agents_apitoken_change", args=[token.pk]),
        {"name": "new", "role": "owner", "network": "", "digest": "0" * 64, "revoked_at": "2020-01-01", "_save": "1"},
    )

    assert response.status_code == 302
    token.refresh_from_db()
    assert (token.name, token.role, token.network, token.revoked_at) == ("new", "viewer", network, None)
    assert token.digest == ApiToken.digest_of(raw)


# --- revoking tokens -----------------------------------------------------------------------------


def revoke_in_admin(staff: Client, *tokens: ApiToken) -> Any:
    return staff.post(
        reverse("admin:hub_agents_apitoken_changelist"),
        {"action": "revoke", "_selected_action": [token.pk for token in tokens], "index": "0"},
    )


def test_the_revoke_action_revokes_and_audits(staff, network):
    first, first_raw = token_create(network=network, name="one")
    second, _ = token_create(network=network, name="two")
    kept, kept_raw = token_create(network=network, name="kept")

    response = revoke_in_admin(staff, first, second)

    assert response.status_code == 302
    assert "Revoked 2 token(s)" in staff.get(response["Location"]).content.decode()
    assert ApiToken.objects.get(pk=first.pk).revoked_at is not None
    assert ApiToken.objects.get(pk=second.pk).revoked_at is not None
    assert ApiToken.objects.get(pk=kept.pk).revoked_at is None
    assert sorted((row["actor"], row["target"]) for row in audit("token.revoked", network)) == sorted(
        [("user:boss", f"token {first_raw[:12]}… (one)"), ("user:boss", f"token {second.prefix}… (two)")]
    )
    assert token_authenticate(raw=kept_raw).roles == {network.pk: "member"}


def test_revoking_an_already_revoked_token_records_nothing_more(staff, network):
    token, _ = token_create(network=network, name="one")
    token_revoke(token=token, by="user:earlier")
    revoked_at = ApiToken.objects.get(pk=token.pk).revoked_at

    revoke_in_admin(staff, token)

    assert ApiToken.objects.get(pk=token.pk).revoked_at == revoked_at
    assert [row["actor"] for row in audit("token.revoked")] == ["user:earlier"]


def test_revoking_a_user_token_is_audited_in_each_of_its_networks(staff, network, other_network):
    carol = user_get_or_create(username="carol")
    membership_set(user=carol, network=network)
    membership_set(user=carol, network=other_network)
    token, raw = token_create(user=carol, name="laptop")

    revoke_in_admin(staff, token)

    target = f"token {raw[:12]}… (laptop) of user carol"
    rows = audit("token.revoked")
    assert sorted((row["network_name"], row["actor"], row["target"]) for row in rows) == [
        ("alpha", "user:boss", target),
        ("beta", "user:boss", target),
    ]


def mcp_status(client: Client, raw: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_tasks", "arguments": {}}}
    headers = {"Authorization": f"Bearer {raw}", "MCP-Protocol-Version": MCP_VERSION}
    return client.post("/mcp", data=json.dumps(body), content_type="application/json", headers=headers).status_code


def rest_status(client: Client, raw: str) -> int:
    return client.get("/api/v1/tasks", headers={"Authorization": f"Bearer {raw}"}).status_code


def sse_status(client: Client, raw: str) -> int:
    response = client.get("/events/coder", headers={"Authorization": f"Bearer {raw}"})
    response.close()  # a 200 is an endless stream: never read it
    return response.status_code


@COMMITTED
@pytest.mark.parametrize("how", ["admin", "service"])
@pytest.mark.parametrize("kind", ["ntok", "utok"])
def test_a_revoked_token_is_refused_on_its_very_next_request(client, boss, network, how, kind):
    if kind == "ntok":
        token, raw = token_create(network=network, name="agent")
    else:
        carol = user_get_or_create(username="carol")
        membership_set(user=carol, network=network)
        token, raw = token_create(user=carol, name="agent")
    agent = Client()
    assert (mcp_status(agent, raw), rest_status(agent, raw), sse_status(agent, raw)) == (200, 200, 200)

    if how == "admin":
        client.force_login(boss)
        assert revoke_in_admin(client, token).status_code == 302
    else:
        assert token_revoke(token=token, by="user:boss") is True

    assert (mcp_status(agent, raw), rest_status(agent, raw), sse_status(agent, raw)) == (401, 401, 401)
    assert [row["actor"] for row in audit("token.revoked", network)] == ["user:boss"]


# --- tokens are never deleted --------------------------------------------------------------------


def test_tokens_cannot_be_deleted_in_the_admin(staff, network):
    token, raw = token_create(network=network, name="keep-me")
    delete_url = reverse("admin:hub_agents_apitoken_delete", args=[token.pk])

    assert staff.get(delete_url).status_code == 403
    assert staff.post(delete_url, {"post": "yes"}).status_code == 403
    changelist = staff.get(reverse("admin:hub_agents_apitoken_changelist")).content.decode()
    assert 'value="delete_selected"' not in changelist and 'value="revoke"' in changelist
    assert delete_url not in staff.get(reverse("admin:hub_agents_apitoken_change", args=[token.pk])).content.decode()
    staff.post(
        reverse("admin:hub_agents_apitoken_changelist"),
        {"action": "delete_selected", "_selected_action": [token.pk], "post": "yes"},
    )

    assert ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).exists()
    assert token_authenticate(raw=raw).roles == {network.pk: "member"}


# --- networks and their members ------------------------------------------------------------------


def inline(rows: list[dict[str, Any]], initial: int = 0) -> dict[str, Any]:
    """The Membership inline's formset fields for these rows (the first `initial` ones exist)."""
    data: dict[str, Any] = {
        "memberships-TOTAL_FORMS": str(len(rows)),
        "memberships-INITIAL_FORMS": str(initial),
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }
    for index, row in enumerate(rows):
        data |= {f"memberships-{index}-{key}": value for key, value in row.items()}
    return data


def test_adding_a_network_with_a_member_is_audited_as_the_admin(staff, db):
    carol = user_get_or_create(username="carol")

    response = staff.post(
        reverse("admin:hub_agents_network_add"),
        {"name": "gamma", "_save": "Save", **inline([{"user": carol.pk, "role": "admin"}])},
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    network = Network.objects.get(name="gamma")
    assert Network.objects.count() == 1
    assert Membership.objects.get(user=carol).network == network
    assert Membership.objects.get(user=carol).role == "admin"
    assert audit("network.created") == [
        {"network_id": network.pk, "network_name": "gamma", "actor": "user:boss", "target": "gamma", "detail": {}}
    ]
    assert audit("membership.added") == [
        {
            "network_id": network.pk,
            "network_name": "gamma",
            "actor": "user:boss",
            "target": "user carol",
            "detail": {"role": "admin"},
        }
    ]


def test_a_duplicate_or_empty_network_name_is_a_form_error(staff, network):
    for name in ("alpha", ""):
        response = staff.post(reverse("admin:hub_agents_network_add"), {"name": name, "_save": "Save", **inline([])})
        assert response.status_code == 200 and "errornote" in response.content.decode()

    assert Network.objects.count() == 1
    assert len(audit("network.created")) == 1  # the fixture's own


def test_adding_changing_and_removing_members_through_the_inline_is_audited(staff, network):
    carol, dora, eve = (user_get_or_create(username=name) for name in ("carol", "dora", "eve"))
    carols = membership_set(user=carol, network=network, role="member")
    doras = membership_set(user=dora, network=network, role="viewer")
    AuditEntry.objects.all().delete()

    response = staff.post(
        reverse("admin:hub_agents_network_change", args=[quote(network.pk)]),
        {
            "name": "alpha",
            "_save": "Save",
            **inline(
                [
                    {"id": carols.pk, "network": network.pk, "user": carol.pk, "role": "owner"},
                    {"id": doras.pk, "network": network.pk, "user": dora.pk, "role": "viewer", "DELETE": "on"},
                    {"network": network.pk, "user": eve.pk, "role": "member"},
                ],
                initial=2,
            ),
        },
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    assert dict(Membership.objects.filter(network=network).values_list("user__username", "role")) == {
        "carol": "owner",
        "eve": "member",
    }
    rows = AuditEntry.objects.filter(network_id=network.pk).order_by("id")
    assert sorted((r.action, r.actor, r.target, json.dumps(r.detail, sort_keys=True)) for r in rows) == sorted(
        [
            ("membership.changed", "user:boss", "user carol", '{"previous_role": "member", "role": "owner"}'),
            ("membership.removed", "user:boss", "user dora", '{"role": "viewer"}'),
            ("membership.added", "user:boss", "user eve", '{"role": "member"}'),
        ]
    )


def test_an_unchanged_inline_records_nothing(staff, network):
    carol = user_get_or_create(username="carol")
    carols = membership_set(user=carol, network=network, role="admin")
    before = AuditEntry.objects.count()

    response = staff.post(
        reverse("admin:hub_agents_network_change", args=[quote(network.pk)]),
        {
            "name": "alpha",
            "_save": "Save",
            **inline([{"id": carols.pk, "network": network.pk, "user": carol.pk, "role": "admin"}], initial=1),
        },
    )

    assert response.status_code == 302
    assert AuditEntry.objects.count() == before


def test_changing_the_user_of_an_inline_row_replaces_the_member(staff, network):
    carol, dora = user_get_or_create(username="carol"), user_get_or_create(username="dora")
    carols = membership_set(user=carol, network=network, role="admin")

    response = staff.post(
        reverse("admin:hub_agents_network_change", args=[quote(network.pk)]),
        {
            "name": "alpha",
            "_save": "Save",
            **inline([{"id": carols.pk, "network": network.pk, "user": dora.pk, "role": "admin"}], initial=1),
        },
    )

    assert response.status_code == 302
    assert list(Membership.objects.filter(network=network).values_list("user__username", flat=True)) == ["dora"]


@pytest.fixture
def busy(network) -> Callable[[bool], Network]:
    """busy(with_token) -> alpha with a member and two tasks (and a token, if asked)."""

    def make(with_token: bool) -> Network:
        carol = user_get_or_create(username="carol")
        membership_set(user=carol, network=network, role="admin", by="user:boss")
        sender = actor_for_user(carol)  # a signed-in user, no token
        cancel_task(actor=sender, task_id=send_task(actor=sender, alias="coder", task="one")["task_id"])
        send_task(actor=sender, alias="coder", task="two")
        if with_token:
            token_create(network=network, name="ci")
        return network

    return make


@pytest.mark.parametrize("how", ["delete-view", "delete-action"])
@pytest.mark.parametrize("with_token", [False, True])
def test_deleting_a_network_in_the_admin_keeps_its_audit_rows(staff, busy, how, with_token):
    network = busy(with_token)
    before = list(AuditEntry.objects.filter(network_id=network.pk).order_by("id").values())

    if how == "delete-view":
        response = staff.post(reverse("admin:hub_agents_network_delete", args=[quote(network.pk)]), {"post": "yes"})
    else:
        response = staff.post(
            reverse("admin:hub_agents_network_changelist"),
            {"action": "delete_selected", "_selected_action": [network.pk], "post": "yes"},
        )

    assert response.status_code == 302, response.content.decode()[:3000]
    assert not Network.objects.filter(pk=network.pk).exists()
    assert not Task.objects.exists() and not TaskEvent.objects.exists() and not InboxMessage.objects.exists()
    assert not ApiToken.objects.exists() and not Membership.objects.exists()
    after = list(AuditEntry.objects.filter(network_id=network.pk).order_by("id").values())
    assert after[: len(before)] == before
    assert [(r["action"], r["actor"], r["target"], r["network_name"], r["detail"]) for r in after[len(before) :]] == [
        ("network.deleted", "user:boss", "alpha", "alpha", {"tasks": 2, "members": 1})
    ]
    audit_page = staff.get(reverse("admin:hub_agents_auditentry_changelist") + "?q=alpha").content.decode()
    assert "network.deleted" in audit_page


# --- the audit log is read-only ------------------------------------------------------------------


def test_the_audit_admin_is_read_only(staff, network):
    entry = AuditEntry.objects.get(network_id=network.pk, action="network.created")
    change_url = reverse("admin:hub_agents_auditentry_change", args=[entry.pk])

    assert staff.get(reverse("admin:hub_agents_auditentry_add")).status_code == 403
    assert staff.get(reverse("admin:hub_agents_auditentry_delete", args=[entry.pk])).status_code == 403
    assert (
        staff.post(reverse("admin:hub_agents_auditentry_delete", args=[entry.pk]), {"post": "yes"}).status_code == 403
    )
    page = staff.get(change_url)
    assert page.status_code == 200
    body = page.content.decode()
    assert "network.created" in body and 'name="_save"' not in body and 'name="actor"' not in body
    assert staff.post(change_url, {"actor": "user:forger", "target": "x", "_save": "Save"}).status_code == 403
    changelist = staff.get(reverse("admin:hub_agents_auditentry_changelist")).content.decode()
    assert 'value="delete_selected"' not in changelist
    assert reverse("admin:hub_agents_auditentry_add") not in changelist
    staff.post(
        reverse("admin:hub_agents_auditentry_changelist"),
        {"action": "delete_selected", "_selected_action": [entry.pk], "post": "yes"},
    )
    entry.refresh_from_db()
    assert (entry.actor, entry.target) == ("system", "alpha")


def test_the_node_admin_shows_what_the_node_reported_read_only(staff, agent):
    report_node(
        actor=agent, node_id="box-1", host="box1.lan", os="Linux 6.8", agent_version="0.9.0", slots_total=8,
        slots_used=3, runtimes=[{"name": "codex", "version": "0.58.0"}],
        agents=[{"alias": "builder", "runtime": "codex", "concurrency": 3, "running": 3}],
    )  # fmt: skip
    node = Node.objects.get(node_id="box-1")
    change_url = reverse("admin:hub_agents_node_change", args=[node.pk])

    body = staff.get(change_url).content.decode()
    staff.post(change_url, {"node_id": "box-1", "network": node.network_id, "host": "forged", "slots_used": 0})

    for shown in ("box1.lan", "Linux 6.8", "0.9.0", "codex", "builder"):
        assert shown in body, shown
    for field in ("host", "os", "agent_version", "runtimes", "agents", "slots_total", "slots_used"):
        assert f'name="{field}"' not in body, field
    node.refresh_from_db()
    assert (node.host, node.slots_used) == ("box1.lan", 3)
    assert "box1.lan" in staff.get(reverse("admin:hub_agents_node_changelist")).content.decode()


# --- every page renders --------------------------------------------------------------------------


@pytest.fixture
def everything(network, agent, online, boss, make_actor) -> None:
    """A row in every registered model, so each changelist has something to render."""
    online("coder", node_id="node-1", node_name="box", model="m", agent="agent-node:sdk")
    sent = send_task(actor=agent, alias="coder", task="parent")["task_id"]
    send_task(actor=agent, alias="coder", task="child", parent_task_id=sent)
    report_completion(actor=agent, alias="coder", task=sent, result="done", artifacts=["a.txt"])
    membership_set(user=boss, network=network, role="owner")
    token_create(user=boss, name="mine")
    report_status(actor=agent, alias="helper", resume_id="r-helper", status="blocked")
    Group.objects.create(name="operators")
    # A rule, the call it held and a vote on it.
    ApprovalRule.objects.create(network=network, name="hold broadcasts", tool="broadcast")
    held = broadcast(actor=agent, message="everyone")["approval_id"]
    decide_approval(actor=make_actor(network, "owner"), approval_id=held, decision="reject")
    # A webhook (an address literal: nothing is resolved or sent) and one of its deliveries.
    hook, _ = webhook_create(
        actor=make_actor(network, "owner"), network_id=network.id, url="https://93.184.215.14/hook", event_types=[]
    )
    Delivery.objects.create(subscription=hook, event_type="new_task", outcome="failed")
    nightly = schedule_create(
        actor=make_actor(network, "owner"), name="nightly", alias="coder", task="t", cron="0 2 * * *"
    )
    schedule_run_now(actor=make_actor(network, "owner"), schedule_id=nightly["schedule"]["schedule_id"])
    # A command to a node that hosts coder.
    report_node(
        actor=agent, node_id="node-1", agents=[{"alias": "coder", "runtime": "sdk", "concurrency": 1, "running": 0}]
    )
    node_command(actor=make_actor(network, "owner"), node_id="node-1", kind="pause", alias="coder")
    cap_set(actor=make_actor(network, "owner"), scope="runtime", value="codex", limit=2)
    budget_set(actor=make_actor(network, "owner"), alias="coder", period="month", limit_usd=20.0)


def test_the_admin_index_and_every_changelist_and_change_page_render(staff, everything):
    assert staff.get(reverse("admin:index")).status_code == 200
    models = list(admin.site._registry)
    assert {m._meta.label for m in models} >= {
        "hub_agents.Network",
        "hub_agents.ApiToken",
        "hub_agents.AgentSession",
        "hub_agents.Node",
        "hub_agents.AuditEntry",
        "hub_tasks.Task",
        "hub_tasks.InboxMessage",
        "hub_tasks.Completion",
        "hub_approvals.ApprovalRule",
        "hub_approvals.Approval",
        "hub_webhooks.Subscription",
        "hub_webhooks.Delivery",
        "hub_schedules.Schedule",
        "hub_schedules.ScheduleRun",
        "hub_tasks.Cap",
        "hub_tasks.Budget",
    }
    for model in models:
        info = (model._meta.app_label, model._meta.model_name)
        changelist = staff.get(reverse("admin:{}_{}_changelist".format(*info)))
        assert changelist.status_code == 200, info
        searched = staff.get(reverse("admin:{}_{}_changelist".format(*info)), {"q": "coder"})
        assert searched.status_code == 200, info
        first = model._default_manager.first()
        assert first is not None, info
        change = staff.get(reverse("admin:{}_{}_change".format(*info), args=[quote(first.pk)]))
        assert change.status_code == 200, info


@pytest.mark.parametrize(
    "url", ["admin:hub_agents_network_add", "admin:hub_agents_apitoken_add", "admin:hub_agents_auditentry_changelist"]
)
def test_admin_pages_need_staff(client, db, url):
    response = client.get(reverse(url))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
