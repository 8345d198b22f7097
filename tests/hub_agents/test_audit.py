"""The audit log: a row for every audited action, written in the action's transaction, never a secret.

Task actions go through the public surfaces (MCP tools/call, REST, the dashboard's forms); network,
membership and token actions through the services and the management commands (the admin has its
own tests in test_admin.py). The rows are read back from the model and through the dashboard page.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import transaction
from django.test import Client

from hub_agents.actors import Actor
from hub_agents.models import AgentSession, ApiToken, AuditEntry, Membership, Network
from hub_agents.services import (
    membership_remove,
    membership_set,
    network_create,
    network_delete,
    token_authenticate,
    token_create,
    token_revoke,
    user_get_or_create,
)
from hub_core.errors import HubError
from hub_tasks.models import InboxMessage, Task
from tests.helpers.calls import broadcast, cancel_task, report_status, send_reply, send_task

MCP_VERSION = "2025-11-25"
# /mcp runs its database work on a pool thread with a connection of its own: data must be committed.
COMMITTED = pytest.mark.django_db(transaction=True)


# --- helpers -------------------------------------------------------------------------------------


def entries(network: Network | str, action: str | None = None) -> list[dict[str, Any]]:
    """The network's audit rows (optionally of one action), oldest first, as plain dicts."""
    network_id = network if isinstance(network, str) else network.pk
    rows = AuditEntry.objects.filter(network_id=network_id).order_by("created_at", "id")
    if action is not None:
        rows = rows.filter(action=action)
    return list(rows.values("network_id", "network_name", "action", "actor", "target", "detail"))


def the_entry(network: Network, action: str) -> dict[str, Any]:
    rows = entries(network, action)
    assert len(rows) == 1, rows
    return rows[0]


def audit_dump() -> str:
    """Every audit row, every column, as one string: what a leak would show up in."""
    return json.dumps(list(AuditEntry.objects.values()), default=str)


def token_target(raw: str, name: str = "", username: str | None = None) -> str:
    owner = f" of user {username}" if username else ""
    return f"token {raw[:12]}… ({name or 'unnamed'}){owner}"


@dataclass
class Caller:
    """Credentials for MCP/REST, and the label the audit log must show for them."""

    headers: dict[str, str]
    label: str


def ntok_caller(network: Network, name: str = "ci-bot", role: str = "member") -> Caller:
    _, raw = token_create(network=network, role=role, name=name)
    return Caller({"Authorization": f"Bearer {raw}"}, f"{raw[:12]} ({name})")


def utok_caller(network: Network, username: str = "bob", role: str = "member") -> Caller:
    user = user_get_or_create(username=username)
    membership_set(user=user, network=network, role=role)
    _, raw = token_create(user=user)
    return Caller({"Authorization": f"Bearer {raw}"}, f"user:{username}")


REST_ROUTES: dict[str, tuple[str, int]] = {
    "retry_task": ("tasks/{task_id}/retry", 200),
    "cancel_task": ("tasks/{task_id}/cancel", 200),
    "reassign_task": ("tasks/{task_id}/reassign", 200),
    "broadcast": ("broadcasts", 201),
}


def call_tool(client: Client, surface: str, caller: Caller, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run a tool over MCP (tools/call) or REST; the tool's result object, which must be ok."""
    if surface == "mcp":
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        reply = client.post(
            "/mcp",
            data=json.dumps(body),
            content_type="application/json",
            headers={**caller.headers, "MCP-Protocol-Version": MCP_VERSION},
        )
        assert reply.status_code == 200, reply.content
        result = reply.json()["result"]
        assert result["isError"] is False, result
        return result["structuredContent"]
    path, status = REST_ROUTES[tool]
    fields = dict(arguments)
    url = "/api/v1/" + path.format(task_id=fields.pop("task_id", ""))
    reply = client.post(url, data=json.dumps(fields), content_type="application/json", headers=caller.headers)
    assert reply.status_code == status, reply.content
    assert reply.json()["ok"] is True
    return reply.json()


@pytest.fixture
def sent(agent: Actor) -> Callable[..., str]:
    """sent(alias="coder") -> the id of a fresh task delivered to the alias."""

    def send(alias: str = "coder", task: str = "fix the bug") -> str:
        return send_task(actor=agent, alias=alias, task=task, from_session="lead")["task_id"]

    return send


@pytest.fixture
def two_online(online: Callable[..., dict]) -> list[str]:
    online("coder", server="s1")
    online("reviewer", server="s2")
    return ["coder", "reviewer"]


@pytest.fixture
def browser(django_user_model: Any, network: Network) -> Callable[..., Client]:
    """browser(role, username, network=...) -> a dashboard client signed in as a member with that role."""

    def make(role: str = "owner", username: str = "operator", in_network: Network | None = None) -> Client:
        user = django_user_model.objects.create_user(username)
        membership_set(user=user, network=in_network or network, role=role)
        client = Client()
        client.force_login(user)
        return client

    return make


# --- task actions through MCP and REST -----------------------------------------------------------

SURFACES = [
    pytest.param("mcp", "ntok", marks=COMMITTED, id="mcp-ntok"),
    pytest.param("mcp", "utok", marks=COMMITTED, id="mcp-utok"),
    pytest.param("rest", "ntok", id="rest-ntok"),
    pytest.param("rest", "utok", id="rest-utok"),
]


def make_caller(kind: str, network: Network) -> Caller:
    return ntok_caller(network) if kind == "ntok" else utok_caller(network)


@pytest.mark.parametrize(("surface", "kind"), SURFACES)
def test_retry_is_audited_with_the_callers_label(client, network, agent, sent, surface, kind):
    task_id = sent()
    cancel_task(actor=agent, task_id=task_id)
    caller = make_caller(kind, network)

    call_tool(client, surface, caller, "retry_task", {"task_id": task_id})

    assert the_entry(network, "task.retried") == {
        "network_id": network.pk,
        "network_name": "alpha",
        "action": "task.retried",
        "actor": caller.label,
        "target": f"task {task_id}",
        "detail": {"to": "coder"},
    }


@pytest.mark.parametrize(("surface", "kind"), SURFACES)
def test_cancel_is_audited_with_its_reason(client, network, sent, surface, kind):
    task_id = sent()
    caller = make_caller(kind, network)

    call_tool(client, surface, caller, "cancel_task", {"task_id": task_id, "reason": "not needed"})

    assert the_entry(network, "task.cancelled") == {
        "network_id": network.pk,
        "network_name": "alpha",
        "action": "task.cancelled",
        "actor": caller.label,
        "target": f"task {task_id}",
        "detail": {"reason": "not needed"},
    }


@pytest.mark.parametrize(("surface", "kind"), SURFACES)
def test_reassign_is_audited_with_both_aliases(client, network, sent, surface, kind):
    task_id = sent()
    caller = make_caller(kind, network)

    call_tool(client, surface, caller, "reassign_task", {"task_id": task_id, "new_alias": "reviewer"})

    assert the_entry(network, "task.reassigned") == {
        "network_id": network.pk,
        "network_name": "alpha",
        "action": "task.reassigned",
        "actor": caller.label,
        "target": f"task {task_id}",
        "detail": {"previous_alias": "coder", "to": "reviewer"},
    }


@pytest.mark.parametrize(("surface", "kind"), SURFACES)
def test_broadcast_is_audited_with_its_message_filters_and_recipients(client, network, two_online, surface, kind):
    caller = make_caller(kind, network)

    result = call_tool(client, surface, caller, "broadcast", {"message": "stand down", "filter_status": "idle"})

    assert result["recipients"] == 2
    assert the_entry(network, "broadcast.sent") == {
        "network_id": network.pk,
        "network_name": "alpha",
        "action": "broadcast.sent",
        "actor": caller.label,
        "target": "2 online agents",
        "detail": {
            "message": "stand down",
            "filter_server": None,
            "filter_status": "idle",
            "recipients": ["coder", "reviewer"],
        },
    }


def test_a_broadcast_row_keeps_only_the_first_200_characters(client, network, two_online):
    call_tool(client, "rest", ntok_caller(network), "broadcast", {"message": "x" * 500, "filter_server": "s2"})

    row = the_entry(network, "broadcast.sent")
    assert row["detail"]["message"] == "x" * 200
    assert (row["target"], row["detail"]["recipients"], row["detail"]["filter_server"]) == (
        "1 online agents",
        ["reviewer"],
        "s2",
    )


def test_a_tool_call_in_another_network_lands_in_that_networks_log(client, network, other_network, make_actor):
    foreign = make_actor(other_network, "member")
    task_id = send_task(actor=foreign, alias="coder", task="elsewhere")["task_id"]

    call_tool(client, "rest", ntok_caller(other_network), "cancel_task", {"task_id": task_id})

    assert entries(network, "task.cancelled") == []
    assert the_entry(other_network, "task.cancelled")["network_name"] == "beta"


# --- task actions through the dashboard's forms --------------------------------------------------


@pytest.mark.parametrize(
    ("action", "form", "expected_detail"),
    [
        ("retry", {}, {"to": "coder"}),
        ("cancel", {"reason": "wrong repo"}, {"reason": "wrong repo"}),
        ("reassign", {"new_alias": "reviewer"}, {"previous_alias": "coder", "to": "reviewer"}),
    ],
)
def test_dashboard_task_actions_are_audited_as_the_user(browser, network, agent, sent, action, form, expected_detail):
    task_id = sent()
    if action == "retry":
        cancel_task(actor=agent, task_id=task_id)
    operator = browser("admin")

    reply = operator.post(f"/tasks/{task_id}/{action}/", form)

    assert reply.status_code == 302
    row = the_entry(
        network, {"retry": "task.retried", "cancel": "task.cancelled", "reassign": "task.reassigned"}[action]
    )
    assert (row["actor"], row["target"], row["detail"]) == ("user:operator", f"task {task_id}", expected_detail)


def test_dashboard_broadcast_is_audited_as_the_user(browser, network, two_online):
    reply = browser("member").post("/broadcast/", {"message": "lunch", "filter_server": "s1"})

    assert reply.status_code == 302
    row = the_entry(network, "broadcast.sent")
    assert (row["actor"], row["target"]) == ("user:operator", "1 online agents")
    assert row["detail"] == {"message": "lunch", "filter_server": "s1", "filter_status": None, "recipients": ["coder"]}


# --- networks, memberships, tokens through the services ------------------------------------------


def test_network_create_is_audited_once_by_system_by_default(db):
    network, created = network_create(name="gamma")
    again, created_again = network_create(name="gamma", by="user:boss")

    assert (created, created_again, again.pk) == (True, False, network.pk)
    assert entries(network) == [
        {
            "network_id": network.pk,
            "network_name": "gamma",
            "action": "network.created",
            "actor": "system",
            "target": "gamma",
            "detail": {},
        }
    ]


def test_membership_add_change_and_remove_are_audited(network):
    carol = user_get_or_create(username="carol")

    membership_set(user=carol, network=network, role="viewer", by="user:boss")
    membership_set(user=carol, network=network, role="viewer", by="user:boss")  # no change: no row
    membership_set(user=carol, network=network, by="user:boss")  # no role given: no change, no row
    membership_set(user=carol, network=network, role="admin", by="user:dora")
    assert membership_remove(user=carol, network=network, by="user:eve") is True
    assert membership_remove(user=carol, network=network, by="user:eve") is False  # nothing left: no row

    rows = [
        (r["action"], r["actor"], r["target"], r["detail"]) for r in entries(network) if "membership" in r["action"]
    ]
    assert rows == [
        ("membership.added", "user:boss", "user carol", {"role": "viewer"}),
        ("membership.changed", "user:dora", "user carol", {"role": "admin", "previous_role": "viewer"}),
        ("membership.removed", "user:eve", "user carol", {"role": "admin"}),
    ]
    assert {r["network_name"] for r in entries(network)} == {"alpha"}


def test_membership_added_without_a_role_records_member_and_system(network):
    membership_set(user=user_get_or_create(username="carol"), network=network)

    row = the_entry(network, "membership.added")
    assert (row["actor"], row["detail"]) == ("system", {"role": "member"})


def test_network_token_create_and_revoke_are_audited(network):
    token, raw = token_create(network=network, role="admin", name="deployer", by="user:boss")
    assert token_revoke(token=token, by="user:dora") is True
    assert token_revoke(token=token, by="user:dora") is False  # already revoked: no second row

    rows = [(r["action"], r["actor"], r["target"], r["detail"]) for r in entries(network) if "token" in r["action"]]
    target = token_target(raw, "deployer")
    assert rows == [
        ("token.created", "user:boss", target, {"role": "admin"}),
        ("token.revoked", "user:dora", target, {}),
    ]


def test_a_user_token_is_audited_in_each_of_its_users_networks(network, other_network, db):
    carol = user_get_or_create(username="carol")
    membership_set(user=carol, network=network, role="member")
    membership_set(user=carol, network=other_network, role="viewer")
    third, _ = network_create(name="gamma")

    token, raw = token_create(user=carol, name="laptop", by="user:boss")
    token_revoke(token=token, by="user:carol")

    target = token_target(raw, "laptop", "carol")
    for where in (network, other_network):
        created, revoked = the_entry(where, "token.created"), the_entry(where, "token.revoked")
        assert (created["actor"], created["target"], created["detail"]) == (
            "user:boss",
            target,
            {"role": "as its user"},
        )
        assert (revoked["actor"], revoked["target"]) == ("user:carol", target)
    assert entries(third, "token.created") == []


def test_a_user_token_with_the_longest_name_and_username_is_created_and_audited(network):
    user = user_get_or_create(username="u" * 150)
    membership_set(user=user, network=network)

    _, raw = token_create(user=user, name="n" * 200, by="user:boss")

    assert the_entry(network, "token.created")["target"] == token_target(raw, "n" * 200, "u" * 150)


# --- the management commands ---------------------------------------------------------------------


def run(command: str, *args: str) -> str:
    """Run a manage.py command; its last stdout line (the network id, or the raw token)."""
    out = StringIO()
    call_command(command, *args, stdout=out, stderr=StringIO())
    return out.getvalue().strip().splitlines()[-1]


def test_create_network_command_is_audited_as_the_cli(db):
    network_id = run("create_network", "gamma")
    run("create_network", "gamma")  # found, not created: no second row

    assert entries(network_id) == [
        {
            "network_id": network_id,
            "network_name": "gamma",
            "action": "network.created",
            "actor": "cli:manage.py",
            "target": "gamma",
            "detail": {},
        }
    ]


def test_create_token_command_for_a_network_is_audited_as_the_cli(network):
    raw = run("create_token", "--network", "alpha", "--role", "admin", "--name", "ci")

    row = the_entry(network, "token.created")
    assert (row["actor"], row["target"], row["detail"]) == ("cli:manage.py", token_target(raw, "ci"), {"role": "admin"})


def test_create_token_command_for_a_user_audits_the_membership_and_the_token(network):
    raw = run("create_token", "--user", "carol", "--network", "alpha", "--role", "viewer")

    assert [(r["action"], r["actor"], r["target"], r["detail"]) for r in entries(network)[1:]] == [
        ("membership.added", "cli:manage.py", "user carol", {"role": "viewer"}),
        ("token.created", "cli:manage.py", token_target(raw, "", "carol"), {"role": "as its user"}),
    ]


# --- the same transaction as the action ----------------------------------------------------------


def rest(client: Client, caller: Caller, path: str, body: dict[str, Any] | None = None) -> int:
    reply = client.post(
        f"/api/v1/{path}", data=json.dumps(body or {}), content_type="application/json", headers=caller.headers
    )
    assert reply.json()["ok"] is False, reply.content
    return reply.status_code


def test_refused_task_actions_leave_no_audit_row(client, network, other_network, agent, sent, online):
    online("coder")
    replied, delivered, cancelled = sent(), sent(), sent()
    send_reply(actor=agent, alias="lead", text="done", in_reply_to=replied)
    cancel_task(actor=agent, task_id=cancelled)
    member, viewer, outsider = ntok_caller(network), ntok_caller(network, role="viewer"), ntok_caller(other_network)
    before = audit_dump()

    refusals = [
        rest(client, member, f"tasks/{replied}/cancel"),  # terminal
        rest(client, member, f"tasks/{delivered}/retry"),  # not retryable
        rest(client, member, f"tasks/{cancelled}/reassign", {"new_alias": "reviewer"}),  # terminal
        rest(client, viewer, f"tasks/{delivered}/cancel"),  # may not write
        rest(client, outsider, f"tasks/{delivered}/cancel"),  # not its network
        rest(client, member, "tasks/no-such-task/retry"),
        rest(client, viewer, "broadcasts", {"message": "hi"}),
        rest(client, member, "broadcasts", {"message": "hi", "filter_status": "sleepy"}),
    ]

    assert refusals == [409, 409, 409, 403, 404, 404, 403, 400]
    assert audit_dump() == before
    assert Task.objects.get(pk=delivered).status == "delivered"


@pytest.mark.parametrize(
    "refused",
    [
        lambda net, user: membership_set(user=user, network=net, role="overlord", by="user:x"),
        lambda net, user: token_create(network=net, user=user, by="user:x"),
        lambda net, user: token_create(by="user:x"),
        lambda net, user: token_create(network=net, role="god", by="user:x"),
        lambda net, user: network_create(name="", by="user:x"),
    ],
    ids=["bad-role", "token-both", "token-neither", "token-bad-role", "empty-network-name"],
)
def test_refused_membership_token_and_network_writes_leave_no_audit_row(network, refused):
    carol = user_get_or_create(username="carol")
    before, tokens = audit_dump(), ApiToken.objects.count()

    with pytest.raises(HubError):
        refused(network, carol)

    assert audit_dump() == before
    assert ApiToken.objects.count() == tokens
    assert not Membership.objects.filter(user=carol).exists()


@pytest.fixture
def scene(network, agent, sent, two_online) -> dict[str, Any]:
    """What the rolled-back actions below act on."""
    carol = user_get_or_create(username="carol")
    membership_set(user=carol, network=network, role="member")
    token, _ = token_create(network=network, name="old")
    return {"task": sent(), "carol": carol, "token": token, "agent": agent, "network": network}


ROLLED_BACK: dict[str, Callable[[dict[str, Any]], Any]] = {
    "network_create": lambda s: network_create(name="gamma", by="user:boss"),
    "network_delete": lambda s: network_delete(network=s["network"], by="user:boss"),
    "membership_add": lambda s: membership_set(user=user_get_or_create(username="dora"), network=s["network"]),
    "membership_change": lambda s: membership_set(user=s["carol"], network=s["network"], role="admin"),
    "membership_remove": lambda s: membership_remove(user=s["carol"], network=s["network"], by="user:boss"),
    "token_create": lambda s: token_create(network=s["network"], name="new"),
    "token_revoke": lambda s: token_revoke(token=s["token"]),
    "task_cancel": lambda s: cancel_task(actor=s["agent"], task_id=s["task"]),
    "broadcast_send": lambda s: broadcast(actor=s["agent"], message="hello"),
}


class Rollback(Exception):
    pass


def world(scene: dict[str, Any]) -> tuple[Any, ...]:
    """What the rolled-back actions could have changed."""
    return (
        list(Network.objects.order_by("pk").values_list("pk", flat=True)),
        list(Membership.objects.order_by("pk").values_list("pk", "role")),
        list(ApiToken.objects.order_by("pk").values_list("pk", "revoked_at")),
        Task.objects.get(pk=scene["task"]).status,
        InboxMessage.objects.count(),
    )


@pytest.mark.parametrize("action", ROLLED_BACK)
def test_a_rolled_back_outer_transaction_takes_the_audit_row_with_it(scene, action):
    before, state = audit_dump(), world(scene)

    with pytest.raises(Rollback), transaction.atomic():
        count = AuditEntry.objects.count()
        ROLLED_BACK[action](scene)
        assert AuditEntry.objects.count() > count  # the row was written, inside the transaction
        raise Rollback

    assert audit_dump() == before
    assert world(scene) == state


# --- no secret in the log ------------------------------------------------------------------------


def test_no_audit_row_holds_a_raw_token_or_its_digest(network, other_network):
    carol = user_get_or_create(username="carol")
    membership_set(user=carol, network=network)
    membership_set(user=carol, network=other_network)
    made = [
        token_create(network=network, role="admin", name="ci", by="user:boss"),
        token_create(user=carol, name="laptop", by="user:boss"),
    ]
    raws = [raw for _, raw in made]
    raws.append(run("create_token", "--network", "beta", "--name", "cli-made"))
    raws.append(run("create_token", "--user", "dora", "--network", "alpha"))
    for token, _ in made:
        token_revoke(token=token, by="user:boss")
    for raw in raws[2:]:
        token_revoke(token=ApiToken.objects.get(digest=ApiToken.digest_of(raw)), by="cli:manage.py")

    dump = audit_dump()
    assert AuditEntry.objects.filter(action="token.created").count() == 5  # carol's token: in both networks
    assert AuditEntry.objects.filter(action="token.revoked").count() == 5
    for raw in raws:
        assert raw[:12] in dump  # the prefix names the token ...
        assert raw not in dump and raw[12:] not in dump  # ... the rest of it never appears
        assert ApiToken.digest_of(raw) not in dump


# --- a deleted network's log stays ---------------------------------------------------------------


def test_a_networks_audit_rows_survive_its_deletion(network, agent, sent, online):
    carol = user_get_or_create(username="carol")
    membership_set(user=carol, network=network, role="admin", by="user:boss")
    token_create(network=network, name="ci", by="user:boss")
    online("coder")
    cancel_task(actor=agent, task_id=sent())
    sent()
    before = entries(network)

    network_delete(network=network, by="user:boss")

    after = entries(network.pk)
    assert after[: len(before)] == before
    assert after[len(before) :] == [
        {
            "network_id": network.pk,
            "network_name": "alpha",
            "action": "network.deleted",
            "actor": "user:boss",
            "target": "alpha",
            "detail": {"tasks": 2, "members": 1},
        }
    ]
    assert not Network.objects.filter(pk=network.pk).exists()
    assert not Task.objects.filter(network_id=network.pk).exists()
    assert not AgentSession.objects.filter(network_id=network.pk).exists()
    assert not ApiToken.objects.filter(network_id=network.pk).exists()


def test_deleting_a_network_twice_records_it_once(network):
    stale = Network.objects.get(pk=network.pk)
    network_delete(network=network, by="user:boss")
    network_delete(network=stale, by="user:boss")

    assert len(entries(network.pk, "network.deleted")) == 1


# --- the dashboard's audit page ------------------------------------------------------------------


@pytest.fixture
def both_logs(network, other_network) -> None:
    """A distinct row in each network's log."""
    membership_set(user=user_get_or_create(username="in-alpha-only"), network=network, by="user:alpha-boss")
    membership_set(user=user_get_or_create(username="in-beta-only"), network=other_network, by="user:beta-boss")


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_owners_and_admins_read_their_networks_audit_page_only(browser, both_logs, role):
    operator = browser(role)

    page = operator.get("/audit/")
    body = page.content.decode()

    assert page.status_code == 200
    assert "user in-alpha-only" in body and "user:alpha-boss" in body and "membership.added" in body
    assert "in-beta-only" not in body and "beta-boss" not in body
    assert 'href="/audit/"' in operator.get("/fleet/").content.decode()


def test_the_audit_page_follows_the_current_network(browser, network, other_network, both_logs):
    operator = browser("owner")
    membership_set(user=user_get_or_create(username="operator"), network=other_network, role="admin")

    beta = operator.get("/audit/", {"network": other_network.pk}).content.decode()
    still_beta = operator.get("/audit/").content.decode()  # the choice sticks to the session
    unknown = operator.get("/audit/", {"network": "alpha-is-not-an-id"}).content.decode()  # the choice stays
    alpha = operator.get("/audit/", {"network": network.pk}).content.decode()

    assert "user in-beta-only" in beta and "in-alpha-only" not in beta
    assert "user in-beta-only" in still_beta and "in-alpha-only" not in still_beta
    assert "user in-beta-only" in unknown and "in-alpha-only" not in unknown
    assert "user in-alpha-only" in alpha and "in-beta-only" not in alpha


def test_an_owner_elsewhere_cannot_read_a_network_where_they_are_a_member(browser, network, other_network, both_logs):
    operator = browser("member")
    membership_set(user=user_get_or_create(username="operator"), network=other_network, role="owner")

    refused = operator.get("/audit/", {"network": network.pk})
    allowed = operator.get("/audit/", {"network": other_network.pk})

    assert refused.status_code == 403 and "in-alpha-only" not in refused.content.decode()
    assert allowed.status_code == 200 and "in-beta-only" in allowed.content.decode()


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_members_and_viewers_get_403_and_no_audit_link(browser, both_logs, role):
    operator = browser(role)

    page = operator.get("/audit/")

    assert page.status_code == 403
    assert "in-alpha-only" not in page.content.decode()
    fleet = operator.get("/fleet/").content.decode()
    assert 'href="/audit/"' not in fleet and ">Audit</a>" not in fleet


def test_the_audit_page_needs_a_login(db):
    reply = Client().get("/audit/")
    assert reply.status_code == 302 and reply["Location"].startswith("/login/")


def test_the_audit_page_shows_newest_first_with_details(browser, network, agent, sent):
    task_id = sent()
    cancel_task(actor=agent, task_id=task_id, reason="superseded")

    body = browser("owner").get("/audit/").content.decode()

    cancelled = body.index(f"task {task_id}")
    assert body.index("user operator") < cancelled < body.index("network.created")  # newest first
    assert "reason: superseded" in body


def test_token_label_authenticates_to_what_the_audit_row_names(network):
    """The actor label of a network token in a row is the one the token authenticates as."""
    _, raw = token_create(network=network, name="ci", by="user:boss")
    actor = token_authenticate(raw=raw)
    report_status(actor=actor, alias="coder", resume_id="r1", status="idle")

    broadcast(actor=actor, message="hello")

    assert the_entry(network, "broadcast.sent")["actor"] == f"{raw[:12]} (ci)" == actor.label
