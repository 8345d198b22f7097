"""Tokens, the management commands that make them, network isolation, and the event schema."""

from __future__ import annotations

import hashlib
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from freezegun import freeze_time

from hub_agents.models import ApiToken, Membership, Network
from hub_agents.services import token_authenticate, token_create, token_revoke, user_get_or_create
from hub_core.events import EVENT_SCHEMA, EventType, HubEvent
from tests.helpers import refused
from tests.helpers.calls import (
    cancel_task,
    get_all_status,
    get_completions,
    get_inbox,
    get_session_status,
    get_task,
    list_tasks,
    report_completion,
    report_status,
    send_message,
    send_task,
)

# --- tokens ---------------------------------------------------------------------------------------


def test_token_stores_only_the_sha256_digest(network):
    token, raw = token_create(network=network, role="member", name="ci")
    assert raw.startswith("ntok_")
    row = ApiToken.objects.values().get(pk=token.pk)
    assert row["digest"] == hashlib.sha256(raw.encode()).hexdigest()
    assert all(raw not in str(value) for value in row.values())


def test_user_token_is_a_utok(db):
    _, raw = token_create(user=user_get_or_create(username="alice"))
    assert raw.startswith("utok_")


def test_raw_token_authenticates_as_its_network_and_role(network):
    _, raw = token_create(network=network, role="viewer")
    actor = token_authenticate(raw=raw)
    assert (dict(actor.roles), actor.network_bound) == ({network.id: "viewer"}, True)


@pytest.mark.parametrize("raw", ["garbage", "ntok_not-a-real-token", ""])
def test_unknown_token_is_unauthorized(db, raw):
    assert refused(token_authenticate, raw=raw).code == "unauthorized"


def test_revoked_token_is_refused(network):
    token, raw = token_create(network=network)
    token_authenticate(raw=raw)
    token_revoke(token=token)
    assert refused(token_authenticate, raw=raw).code == "unauthorized"


def test_revoking_one_token_leaves_another(network):
    first, first_raw = token_create(network=network)
    _, second_raw = token_create(network=network)
    token_revoke(token=first)
    assert refused(token_authenticate, raw=first_raw).code == "unauthorized"
    assert token_authenticate(raw=second_raw).roles == {network.id: "member"}


def test_authenticating_records_last_use(network):
    token, raw = token_create(network=network)
    assert token.last_used_at is None
    with freeze_time("2026-04-12T10:00:00Z") as frozen:
        token_authenticate(raw=raw)
        first = ApiToken.objects.get(pk=token.pk).last_used_at
        assert first is not None
        frozen.tick(5 * 60)
        token_authenticate(raw=raw)
        assert ApiToken.objects.get(pk=token.pk).last_used_at > first


def test_token_of_inactive_user_is_unauthorized(db):
    user = user_get_or_create(username="alice")
    _, raw = token_create(user=user)
    user.is_active = False
    user.save()
    assert refused(token_authenticate, raw=raw).code == "unauthorized"


# --- management commands --------------------------------------------------------------------------


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue().strip().splitlines()[-1]


def test_create_network_prints_its_id_and_is_idempotent(db):
    first = run("create_network", "gamma")
    assert first.startswith("net_")
    assert Network.objects.get(name="gamma").id == first
    assert run("create_network", "gamma") == first
    assert Network.objects.filter(name="gamma").count() == 1


@pytest.mark.parametrize(("extra", "role"), [((), "member"), (("--role", "viewer"), "viewer")])
def test_create_token_for_a_network_prints_an_ntok_with_the_role(network, extra, role):
    raw = run("create_token", "--network", network.name, *extra)
    assert raw.startswith("ntok_")
    actor = token_authenticate(raw=raw)
    assert (dict(actor.roles), actor.network_bound) == ({network.id: role}, True)


def test_create_token_for_a_user_creates_user_and_membership(network):
    raw = run("create_token", "--user", "alice", "--network", network.name, "--role", "admin")
    assert raw.startswith("utok_")
    alice = get_user_model().objects.get(username="alice")
    assert Membership.objects.get(user=alice, network=network).role == "admin"
    actor = token_authenticate(raw=raw)
    assert (dict(actor.roles), actor.network_bound, actor.user_id) == ({network.id: "admin"}, False, alice.pk)


def test_create_token_for_an_unknown_network_is_a_command_error(db):
    with pytest.raises(CommandError, match="nowhere"):
        run("create_token", "--network", "nowhere")
    assert not ApiToken.objects.exists()


# --- network isolation ----------------------------------------------------------------------------


@pytest.fixture
def busy_network(agent, online):
    """`network` with a session, a task, a pending message and a completion for "coder"."""
    online("coder", status="working", server="srv-1")
    sent = send_task(actor=agent, alias="coder", task="write quicksort")
    send_message(actor=agent, alias="coder", message="standup at 10")
    report_completion(actor=agent, alias="coder", task="earlier job", result="done")
    return sent["task_id"]


def test_the_owner_network_sees_its_data(agent, busy_network):
    # The same reads as the outsider's below, so an empty answer there means isolation, not no data.
    assert len(get_all_status(actor=agent)["sessions"]) == 1
    assert get_session_status(actor=agent, alias="coder")["inbox_pending"] == 2
    assert list_tasks(actor=agent)["count"] == 1
    assert get_task(actor=agent, task_id=busy_network)["ok"] is True
    assert len(get_inbox(actor=agent, alias="coder")["messages"]) == 2
    assert len(get_completions(actor=agent)["completions"]) == 1


def test_outsider_sees_nothing_of_another_network(outsider, busy_network):
    assert get_all_status(actor=outsider) == {"ok": True, "sessions": [], "summary": []}
    status = get_session_status(actor=outsider, alias="coder")
    assert (status["session"], status["inbox_pending"], status["recent_completions"]) == (None, 0, [])
    assert list_tasks(actor=outsider) == {"ok": True, "tasks": [], "count": 0, "stats": []}
    assert refused(get_task, actor=outsider, task_id=busy_network).error == "task not found"
    assert get_inbox(actor=outsider, alias="coder") == {"ok": True, "messages": []}
    assert get_completions(actor=outsider) == {"ok": True, "completions": []}


@pytest.mark.parametrize(
    ("read", "args"),
    [
        (get_all_status, {}),
        (get_session_status, {"alias": "coder"}),
        (list_tasks, {}),
        (get_inbox, {"alias": "coder"}),
        (get_completions, {}),
    ],
)
def test_outsider_naming_the_other_network_is_denied(outsider, network, busy_network, read, args):
    assert refused(read, actor=outsider, network_id=network.id, **args).error == "permission_denied"


def test_outsider_cannot_write_into_the_other_network(outsider, network, busy_network):
    assert refused(send_task, actor=outsider, alias="coder", task="x", network_id=network.id).error == (
        "permission_denied"
    )
    assert list_tasks(actor=outsider)["count"] == 0


@pytest.fixture
def both_networks(agent, online, make_actor, other_network):
    beta_agent = make_actor(other_network, "member")
    online("coder")
    online("reviewer", actor=beta_agent)
    alpha_task = send_task(actor=agent, alias="coder", task="alpha work")["task_id"]
    beta_task = send_task(actor=beta_agent, alias="reviewer", task="beta work")["task_id"]
    report_completion(actor=agent, alias="coder", task="alpha done", result="ok")
    report_completion(actor=beta_agent, alias="reviewer", task="beta done", result="ok")
    return alpha_task, beta_task


def test_user_in_both_networks_reads_both(make_actor, network, other_network, both_networks):
    alice = make_actor(user="alice", memberships={network: "member", other_network: "viewer"})
    assert {row["alias"] for row in get_all_status(actor=alice)["sessions"]} == {"coder", "reviewer"}
    assert {row["task_id"] for row in list_tasks(actor=alice)["tasks"]} == set(both_networks)
    assert all(get_task(actor=alice, task_id=task_id)["ok"] for task_id in both_networks)
    assert {row["task"] for row in get_completions(actor=alice)["completions"]} == {"alpha done", "beta done"}
    assert get_session_status(actor=alice, alias="reviewer")["session"]["network_id"] == other_network.id
    narrowed = list_tasks(actor=alice, network_id=other_network.id)["tasks"]
    assert [row["task_id"] for row in narrowed] == [both_networks[1]]


def test_user_in_one_network_reads_only_that_one(make_actor, network, both_networks):
    bob = make_actor(user="bob", memberships={network: "member"})
    assert [row["task_id"] for row in list_tasks(actor=bob)["tasks"]] == [both_networks[0]]
    assert refused(get_task, actor=bob, task_id=both_networks[1]).error == "task not found"


def test_viewer_user_reads_but_cannot_write(make_actor, network, other_network, both_networks):
    alice = make_actor(user="alice", memberships={network: "member", other_network: "viewer"})
    assert list_tasks(actor=alice, network_id=other_network.id)["count"] == 1
    error = refused(send_task, actor=alice, alias="reviewer", task="x", network_id=other_network.id)
    assert error.error == "permission_denied"
    assert send_task(actor=alice, alias="coder", task="fine", network_id=network.id)["ok"] is True
    assert list_tasks(actor=alice, network_id=other_network.id)["count"] == 1


def test_viewer_user_cannot_write_to_an_existing_task(make_actor, other_network, both_networks):
    viewer_only = make_actor(user="carol", memberships={other_network: "viewer"})
    assert refused(cancel_task, actor=viewer_only, task_id=both_networks[1]).error == "permission_denied"
    assert get_task(actor=viewer_only, task_id=both_networks[1])["task"]["status"] == "delivered"


def test_user_in_two_networks_must_name_one_to_write(make_actor, network, other_network):
    alice = make_actor(user="alice", memberships={network: "member", other_network: "member"})
    assert refused(send_task, actor=alice, alias="coder", task="x").code == "network_required"


def test_user_token_still_cannot_report_status(make_actor, network):
    alice = make_actor(user="alice", memberships={network: "owner"})
    assert refused(report_status, actor=alice, resume_id="r", alias="a", status="idle").error == (
        "network_token_required"
    )


# --- events ---------------------------------------------------------------------------------------


def payload_for(event_type: EventType) -> dict:
    return {key: f"{key}-值" for key in sorted(EVENT_SCHEMA[event_type])}


def test_every_event_type_has_a_schema():
    assert set(EVENT_SCHEMA) == set(EventType)


@pytest.mark.parametrize("event_type", list(EventType))
def test_event_payload_with_a_missing_key_is_refused(event_type):
    payload = payload_for(event_type)
    payload.pop(next(iter(payload)))
    with pytest.raises(ValueError):
        HubEvent(type=event_type, network_id="net_1", audience=(), payload=payload)


@pytest.mark.parametrize("event_type", list(EventType))
def test_event_payload_with_an_extra_key_is_refused(event_type):
    payload = {**payload_for(event_type), "surprise": 1}
    with pytest.raises(ValueError):
        HubEvent(type=event_type, network_id="net_1", audience=(), payload=payload)
