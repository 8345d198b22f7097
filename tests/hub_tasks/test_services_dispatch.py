"""Dispatch: send_task, send_message, send_reply and broadcast, and the inbox they fill (get_inbox)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone
from freezegun import freeze_time

from hub_agents.models import AgentSession
from hub_core.errors import HubError
from hub_core.events import EVENT_SCHEMA, EventType
from hub_tasks.models import InboxMessage, Task, TaskEvent
from tests.helpers import refused
from tests.helpers.calls import broadcast, get_inbox, send_message, send_reply, send_task

pytestmark = pytest.mark.django_db

LONG_ID = "a" * 201
LONG_TEXT = "x" * 10_001
INBOX_ROW_KEYS = {
    "id", "type", "priority", "content", "context", "from_session", "task_id", "created_at", "network_id",
    "delivered_at", "delivered_via", "budget_usd", "budget_tokens",
}  # fmt: skip


def written() -> tuple[int, int, int]:
    """What a refused call must leave untouched."""
    return Task.objects.count(), InboxMessage.objects.count(), TaskEvent.objects.count()


def refused_unwritten(call: Callable[[], Any], code: str) -> HubError:
    """The HubError `call` raises; the call must have written nothing."""
    before = written()
    error = refused(call)
    assert error.code == code, error
    assert written() == before
    return error


def refused_argument(call: Callable[[], Any], field: str) -> HubError:
    error = refused_unwritten(call, "invalid_argument")
    assert error.error.startswith(f"{field}: "), error.error
    assert error.extra["field"] == field
    return error


def stale(alias: str) -> None:
    """The alias last reported just over COMMHUB_OFFLINE_AFTER_SECONDS ago."""
    AgentSession.objects.filter(alias=alias).update(last_seen_at=timezone.now() - timedelta(seconds=601))


# --- send_task ---------------------------------------------------------------------------------


def test_task_send_delivers_at_once_into_the_alias_inbox(agent, online):
    online("coder")
    sent = send_task(actor=agent, alias="coder", task="write quicksort")

    task = Task.objects.get()
    assert sent == {"ok": True, "message_id": task.task_id, "task_id": task.task_id, "session_status": "idle"}
    assert (task.status, task.to_name, task.from_name, task.priority, task.content, task.context) == (
        "delivered",
        "coder",
        "hub",
        "normal",
        "write quicksort",
        None,
    )
    assert task.delivered_at == task.created_at
    assert task.expires_at == task.created_at + timedelta(seconds=3600)
    assert list(task.events.values_list("from_status", "to_status")) == [("", "delivered")]
    row = InboxMessage.objects.get()
    assert (row.id, row.task_id, row.to_alias, row.type, row.from_session, row.priority, row.acked_at) == (
        task.task_id,
        task.task_id,
        "coder",
        "task",
        "hub",
        "normal",
        None,
    )


def test_task_send_stores_priority_context_and_sender(agent):
    send_task(actor=agent, alias="coder", task="t", priority="high", context="see #12", from_session="指挥室")

    task, row = Task.objects.get(), InboxMessage.objects.get()
    assert (task.priority, task.context, task.from_name) == ("high", "see #12", "指挥室")
    assert (row.priority, row.context, row.from_session) == ("high", "see #12", "指挥室")


def test_task_send_default_ttl_comes_from_settings(agent, settings):
    settings.COMMHUB_DEFAULT_TTL_SECONDS = 120
    send_task(actor=agent, alias="coder", task="t")

    task = Task.objects.get()
    assert task.expires_at - task.created_at == timedelta(seconds=120)


@pytest.mark.parametrize("ttl", [1, 7200, 86_400, 600.0])
def test_task_send_ttl_sets_expiry(agent, ttl):
    send_task(actor=agent, alias="coder", task="t", ttl_seconds=ttl)

    task = Task.objects.get()
    assert task.expires_at - task.created_at == timedelta(seconds=ttl)


def test_task_send_accepts_every_field_at_its_limit(agent):
    parent = send_task(actor=agent, alias="lead", task="parent")["task_id"]
    sent = send_task(
        actor=agent,
        alias="a" * 200,
        task="t" * 10_000,
        context="c" * 10_000,
        from_session="f" * 200,
        client_request_id="r" * 200,
        parent_task_id=parent,
    )

    task = Task.objects.get(pk=sent["task_id"])
    assert (len(task.to_name), len(task.content), len(task.context), len(task.from_name)) == (200, 10_000, 10_000, 200)
    assert task.parent_task_id == parent
    assert task.client_request_id == "r" * 200


def test_task_send_to_unknown_alias_waits_in_its_inbox_with_a_warning(agent):
    sent = send_task(actor=agent, alias="ghost", task="t")

    assert sent["ok"] is True
    assert sent["session_status"] is None
    assert "'ghost'" in sent["warning"]
    assert InboxMessage.objects.get().to_alias == "ghost"


def test_task_send_ignores_a_same_named_session_of_another_network(agent, outsider, online):
    online("coder", actor=outsider)
    sent = send_task(actor=agent, alias="coder", task="t")

    assert sent["session_status"] is None
    assert "warning" in sent


def test_task_send_reports_a_silent_session_as_offline(agent, online):
    online("coder", status="working")
    stale("coder")

    assert send_task(actor=agent, alias="coder", task="t")["session_status"] == "offline"


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"alias": LONG_ID}, "alias"),
        ({"alias": ""}, "alias"),
        ({"alias": None}, "alias"),
        ({"alias": 7}, "alias"),
        ({"from_session": LONG_ID}, "from_session"),
        ({"network_id": LONG_ID}, "network_id"),
        ({"parent_task_id": LONG_ID}, "parent_task_id"),
        ({"client_request_id": LONG_ID}, "client_request_id"),
        ({"task": LONG_TEXT}, "task"),
        ({"task": ""}, "task"),
        ({"task": "   "}, "task"),
        ({"task": None}, "task"),
        ({"task": 42}, "task"),
        ({"task": "a\x00b"}, "task"),
        ({"context": LONG_TEXT}, "context"),
        ({"context": ["not", "text"]}, "context"),
        ({"ttl_seconds": 86_401}, "ttl_seconds"),
        ({"ttl_seconds": 0}, "ttl_seconds"),
        ({"ttl_seconds": -5}, "ttl_seconds"),
        ({"ttl_seconds": True}, "ttl_seconds"),
        ({"ttl_seconds": "3600"}, "ttl_seconds"),
        ({"ttl_seconds": 1.5}, "ttl_seconds"),
        ({"priority": "urgent"}, "priority"),
        ({"priority": 1}, "priority"),
    ],
)
def test_task_send_refuses_bad_arguments_naming_the_field(agent, arguments, field):
    call = {"alias": "coder", "task": "write quicksort", **arguments}

    refused_argument(lambda: send_task(actor=agent, **call), field)
    assert not Task.objects.exists()
    assert not InboxMessage.objects.exists()


def test_task_send_chains_under_a_parent_task(agent):
    parent = send_task(actor=agent, alias="lead", task="parent")["task_id"]
    child = send_task(actor=agent, alias="coder", task="child", parent_task_id=parent)["task_id"]

    assert Task.objects.get(pk=child).parent_task_id == parent


def test_task_send_refuses_an_unknown_parent(agent):
    error = refused_unwritten(
        lambda: send_task(actor=agent, alias="coder", task="t", parent_task_id="nope"), "parent_task_not_found"
    )
    assert error.error == "parent task not found"


def test_task_send_refuses_a_parent_from_another_network(agent, outsider):
    foreign = send_task(actor=outsider, alias="coder", task="theirs")["task_id"]

    error = refused_unwritten(
        lambda: send_task(actor=agent, alias="coder", task="t", parent_task_id=foreign), "parent_task_not_found"
    )
    assert error.error == "parent task not found"


# --- send_task: client_request_id ---------------------------------------------------------------


def test_task_send_repeat_with_the_same_request_id_returns_the_first_task(
    agent, published, django_capture_on_commit_callbacks
):
    first = send_task(actor=agent, alias="coder", task="t", client_request_id="req-1")
    before = written()
    with django_capture_on_commit_callbacks(execute=True):
        again = send_task(actor=agent, alias="coder", task="t", client_request_id="req-1")

    assert again["task_id"] == again["message_id"] == first["task_id"]
    assert again["duplicate"] is True
    assert "duplicate" not in first
    assert written() == before
    assert published == []


def test_task_send_same_request_id_from_another_token_is_a_new_task(agent, make_actor, network):
    other = make_actor(network, "member")
    first = send_task(actor=agent, alias="coder", task="t", client_request_id="req-1")
    second = send_task(actor=other, alias="coder", task="t", client_request_id="req-1")

    assert second["task_id"] != first["task_id"]
    assert "duplicate" not in second
    assert Task.objects.count() == 2


@pytest.mark.parametrize("change", [{"task": "something else"}, {"alias": "reviewer"}])
def test_task_send_same_request_id_with_other_content_conflicts(agent, change):
    first = send_task(actor=agent, alias="coder", task="t", client_request_id="req-1")

    call = {"alias": "coder", "task": "t", "client_request_id": "req-1", **change}
    error = refused_unwritten(lambda: send_task(actor=agent, **call), "idempotency_conflict")
    assert error.extra["task_id"] == first["task_id"]


# --- send_task: who may send where ---------------------------------------------------------------


def test_task_send_refuses_a_viewer(viewer):
    error = refused_unwritten(lambda: send_task(actor=viewer, alias="coder", task="t"), "permission_denied")
    assert error.error == "permission_denied"


def test_task_send_network_token_cannot_write_to_another_network(agent, other_network):
    error = refused_unwritten(
        lambda: send_task(actor=agent, alias="coder", task="t", network_id=other_network.id), "permission_denied"
    )
    assert error.error == "permission_denied"


def test_task_send_network_token_may_name_its_own_network(agent, network):
    sent = send_task(actor=agent, alias="coder", task="t", network_id=network.id)

    assert Task.objects.get(pk=sent["task_id"]).network_id == network.id


def test_task_send_user_token_in_several_networks_must_name_one(make_actor, network, other_network):
    bob = make_actor(user="bob", memberships={network: "member", other_network: "member"})

    refused_unwritten(lambda: send_task(actor=bob, alias="coder", task="t"), "network_required")


def test_task_send_user_token_lands_in_the_named_network(make_actor, network, other_network):
    bob = make_actor(user="bob", memberships={network: "member", other_network: "member"})
    sent = send_task(actor=bob, alias="coder", task="t", network_id=other_network.id)

    assert Task.objects.get(pk=sent["task_id"]).network_id == other_network.id
    assert InboxMessage.objects.get(pk=sent["message_id"]).network_id == other_network.id


@pytest.mark.parametrize("memberships", ["viewer there", "not a member"])
def test_task_send_user_token_cannot_write_where_it_may_not(make_actor, network, other_network, memberships):
    roles = {network: "member", other_network: "viewer"} if memberships == "viewer there" else {network: "member"}
    carol = make_actor(user="carol", memberships=roles)

    refused_unwritten(
        lambda: send_task(actor=carol, alias="coder", task="t", network_id=other_network.id), "permission_denied"
    )


# --- send_task: events ---------------------------------------------------------------------------


def test_task_send_pushes_new_task_to_the_alias(agent, network, published, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        sent = send_task(
            actor=agent, alias="coder", task="t", priority="high", from_session="lead", context="c", budget_tokens=9
        )

    (event,) = published
    assert (event.type, event.network_id, event.audience) == (EventType.NEW_TASK, network.id, ("coder",))
    assert set(event.payload) == EVENT_SCHEMA[EventType.NEW_TASK]
    assert event.payload == {
        "message_id": sent["message_id"],
        "type": "task",
        "priority": "high",
        "content": "t",
        "context": "c",
        "from_session": "lead",
        "task_id": sent["task_id"],
        # Everything a supervisor needs to start the run from the push alone (commhub-agent node).
        "budget_usd": None,
        "budget_tokens": 9,
    }


def test_task_send_rolled_back_pushes_nothing(agent, published, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError):
        with transaction.atomic():
            send_task(actor=agent, alias="coder", task="t")
            raise RuntimeError("the caller's transaction fails later")

    assert published == []
    assert not Task.objects.exists()


# --- send_message --------------------------------------------------------------------------------


def test_message_send_shows_a_message_and_creates_no_task(agent, online):
    online("coder", status="working")
    sent = send_message(actor=agent, alias="coder", message="lunch at noon")

    row = InboxMessage.objects.get()
    assert sent == {"ok": True, "message_id": row.id, "session_status": "working"}
    assert (row.type, row.to_alias, row.content, row.from_session, row.task_id) == (
        "message",
        "coder",
        "lunch at noon",
        "hub",
        None,
    )
    assert not Task.objects.exists()


def test_message_send_accepts_a_message_at_its_limit(agent):
    send_message(actor=agent, alias="coder", message="m" * 10_000, from_session="f" * 200)

    assert len(InboxMessage.objects.get().content) == 10_000


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"message": LONG_TEXT}, "message"),
        ({"message": ""}, "message"),
        ({"message": 5}, "message"),
        ({"alias": LONG_ID}, "alias"),
        ({"from_session": LONG_ID}, "from_session"),
    ],
)
def test_message_send_refuses_bad_arguments_naming_the_field(agent, arguments, field):
    call = {"alias": "coder", "message": "hi", **arguments}

    refused_argument(lambda: send_message(actor=agent, **call), field)


def test_message_send_refuses_a_viewer(viewer):
    refused_unwritten(lambda: send_message(actor=viewer, alias="coder", message="hi"), "permission_denied")


def test_message_send_pushes_new_message(agent, network, published, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        sent = send_message(actor=agent, alias="coder", message="hi", from_session="lead")

    (event,) = published
    assert (event.type, event.network_id, event.audience) == (EventType.NEW_MESSAGE, network.id, ("coder",))
    assert event.payload == {
        "message_id": sent["message_id"],
        "type": "message",
        "priority": "normal",
        "content": "hi",
        "context": None,
        "from_session": "lead",
        "task_id": None,
        "budget_usd": None,
        "budget_tokens": None,
    }
    assert set(event.payload) == EVENT_SCHEMA[EventType.NEW_MESSAGE]


# --- send_reply ----------------------------------------------------------------------------------


@pytest.fixture
def task_id(agent) -> str:
    """A delivered task from "lead" to "coder"."""
    return send_task(actor=agent, alias="coder", task="write quicksort", from_session="lead")["task_id"]


@pytest.mark.parametrize(
    ("status", "expected"),
    [(None, "replied"), ("replied", "replied"), ("failed", "failed"), ("cancelled", "cancelled")],
)
def test_reply_send_ends_the_task_with_its_status(agent, task_id, status, expected):
    sent = send_reply(actor=agent, alias="lead", text="done", in_reply_to=task_id, status=status, from_session="coder")

    task = Task.objects.get(pk=task_id)
    assert (task.status, task.result) == (expected, "done")
    assert task.completed_at is not None
    assert list(task.events.values_list("from_status", "to_status")) == [("", "delivered"), ("delivered", expected)]
    row = InboxMessage.objects.get(pk=sent["message_id"])
    assert (row.type, row.to_alias, row.content, row.from_session, row.task_id) == (
        "reply",
        "lead",
        "done",
        "coder",
        task_id,
    )


def test_reply_send_stores_only_the_first_4000_characters_as_result(agent, task_id):
    text = "r" * 3_999 + "ABCDEF" + "s" * 1_000
    sent = send_reply(actor=agent, alias="lead", text=text, in_reply_to=task_id)

    assert Task.objects.get(pk=task_id).result == text[:4_000]
    assert InboxMessage.objects.get(pk=sent["message_id"]).content == text


def test_reply_send_withdraws_the_finished_task_from_the_receivers_inbox(agent, task_id):
    send_reply(actor=agent, alias="lead", text="done", in_reply_to=task_id)

    assert get_inbox(actor=agent, alias="coder")["messages"] == []


def test_reply_send_pushes_the_transition_and_the_reply(agent, task_id, published, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        sent = send_reply(actor=agent, alias="lead", text="done", in_reply_to=task_id, from_session="coder")

    by_type = {event.type: event for event in published}
    assert set(by_type) == {EventType.TASK_UPDATED, EventType.NEW_REPLY}
    update = by_type[EventType.TASK_UPDATED]
    assert (update.payload["from_status"], update.payload["to_status"]) == ("delivered", "replied")
    assert set(update.audience) == {"coder", "lead"}
    reply = by_type[EventType.NEW_REPLY]
    assert reply.audience == ("lead",)
    assert (reply.payload["message_id"], reply.payload["task_id"]) == (sent["message_id"], task_id)


def test_reply_send_to_an_unknown_task_is_refused(agent):
    error = refused_unwritten(
        lambda: send_reply(actor=agent, alias="lead", text="t", in_reply_to="nope"), "task_not_found"
    )
    assert error.error == "task not found"


@pytest.mark.parametrize("first", ["replied", "failed", "cancelled"])
def test_reply_send_to_a_finished_task_is_refused(agent, task_id, first):
    send_reply(actor=agent, alias="lead", text="first answer", in_reply_to=task_id, status=first)

    error = refused_unwritten(
        lambda: send_reply(actor=agent, alias="lead", text="again", in_reply_to=task_id), "task_terminal"
    )
    assert error.error == f"task is terminal ({first})"
    task = Task.objects.get(pk=task_id)
    assert (task.status, task.result) == (first, "first answer")


def test_reply_send_to_an_expired_task_is_refused(agent, task_id):
    Task.objects.filter(pk=task_id).update(expires_at=timezone.now() - timedelta(seconds=1))

    error = refused_unwritten(
        lambda: send_reply(actor=agent, alias="lead", text="late", in_reply_to=task_id), "task_terminal"
    )
    assert error.error == "task is terminal (expired)"


def test_reply_send_to_a_plain_message_changes_no_task(agent, task_id):
    message = send_message(actor=agent, alias="coder", message="are you there?", from_session="lead")
    sent = send_reply(actor=agent, alias="lead", text="yes", in_reply_to=message["message_id"])

    assert sent["ok"] is True
    row = InboxMessage.objects.get(pk=sent["message_id"])
    assert (row.type, row.to_alias, row.task_id) == ("reply", "lead", None)
    assert Task.objects.get(pk=task_id).status == "delivered"
    assert TaskEvent.objects.count() == 1


def test_reply_send_without_in_reply_to_changes_no_task(agent, task_id):
    sent = send_reply(actor=agent, alias="lead", text="fyi")

    assert InboxMessage.objects.get(pk=sent["message_id"]).task_id is None
    assert Task.objects.get(pk=task_id).status == "delivered"


@pytest.mark.parametrize("status", ["done", "delivered", "expired", "REPLIED"])
def test_reply_send_refuses_a_status_that_is_not_an_outcome(agent, task_id, status):
    refused_argument(
        lambda: send_reply(actor=agent, alias="lead", text="t", in_reply_to=task_id, status=status), "status"
    )
    assert Task.objects.get(pk=task_id).status == "delivered"


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"text": LONG_TEXT}, "text"),
        ({"text": ""}, "text"),
        ({"text": None}, "text"),
        ({"alias": LONG_ID}, "alias"),
        ({"in_reply_to": LONG_ID}, "in_reply_to"),
        ({"from_session": LONG_ID}, "from_session"),
    ],
)
def test_reply_send_refuses_bad_arguments_naming_the_field(agent, task_id, arguments, field):
    call = {"alias": "lead", "text": "done", "in_reply_to": task_id, **arguments}

    refused_argument(lambda: send_reply(actor=agent, **call), field)
    assert Task.objects.get(pk=task_id).status == "delivered"


def test_reply_send_cannot_see_another_networks_task(outsider, task_id):
    error = refused_unwritten(
        lambda: send_reply(actor=outsider, alias="lead", text="t", in_reply_to=task_id), "task_not_found"
    )
    assert error.error == "task not found"
    assert Task.objects.get(pk=task_id).status == "delivered"


def test_reply_send_refuses_a_viewer(viewer, task_id):
    refused_unwritten(
        lambda: send_reply(actor=viewer, alias="lead", text="t", in_reply_to=task_id), "permission_denied"
    )
    assert Task.objects.get(pk=task_id).status == "delivered"


# --- broadcast -----------------------------------------------------------------------------------


def test_broadcast_reaches_each_online_session_of_the_network_once(agent, outsider, online, network):
    online("a")
    online("b", status="working")
    online("silent")
    stale("silent")
    online("gone", status="offline")
    online("elsewhere", actor=outsider)

    sent = broadcast(actor=agent, message="deploy at 5")

    rows = InboxMessage.objects.order_by("to_alias")
    assert sent["ok"] is True
    assert sent["recipients"] == len(sent["message_ids"]) == 2
    assert set(sent["message_ids"]) == {row.id for row in rows}
    assert [(r.to_alias, r.type, r.from_session, r.content, r.network_id, r.task_id) for r in rows] == [
        ("a", "broadcast", "hub", "deploy at 5", network.id, None),
        ("b", "broadcast", "hub", "deploy at 5", network.id, None),
    ]


def test_broadcast_filter_server_picks_sessions_on_that_server(agent, online):
    online("a", server="s1")
    online("b", server="s2")
    online("c")

    sent = broadcast(actor=agent, message="m", filter_server="s1")

    assert sent["recipients"] == 1
    assert InboxMessage.objects.get().to_alias == "a"


def test_broadcast_filter_status_picks_sessions_in_that_status(agent, online):
    online("a", status="idle")
    online("b", status="working")
    online("c", status="idle")
    stale("c")

    sent = broadcast(actor=agent, message="m", filter_status="idle")

    assert sent["recipients"] == 1
    assert InboxMessage.objects.get().to_alias == "a"


def test_broadcast_with_nobody_online_sends_nothing(agent, online):
    online("silent")
    stale("silent")

    assert broadcast(actor=agent, message="m") == {"ok": True, "recipients": 0, "message_ids": []}
    assert not InboxMessage.objects.exists()


def test_broadcast_pushes_one_event_per_recipient(agent, online, published, django_capture_on_commit_callbacks):
    online("a")
    online("b")
    with django_capture_on_commit_callbacks(execute=True):
        sent = broadcast(actor=agent, message="m")

    assert sorted(event.audience for event in published) == [("a",), ("b",)]
    assert {event.type for event in published} == {EventType.BROADCAST}
    assert sorted(event.payload["message_id"] for event in published) == sorted(sent["message_ids"])
    assert all(set(event.payload) == EVENT_SCHEMA[EventType.BROADCAST] for event in published)


def test_broadcast_refuses_a_viewer(viewer, online):
    online("a")

    refused_unwritten(lambda: broadcast(actor=viewer, message="m"), "permission_denied")


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"message": LONG_TEXT}, "message"),
        ({"message": ""}, "message"),
        ({"filter_server": LONG_ID}, "filter_server"),
        ({"filter_status": "sleeping"}, "filter_status"),
        ({"network_id": LONG_ID}, "network_id"),
    ],
)
def test_broadcast_refuses_bad_arguments_naming_the_field(agent, online, arguments, field):
    online("a")
    call = {"message": "m", **arguments}

    refused_argument(lambda: broadcast(actor=agent, **call), field)


# --- get_inbox -----------------------------------------------------------------------------------


def test_inbox_list_orders_by_priority_then_oldest_first(agent):
    with freeze_time("2026-04-12 10:00:00") as clock:
        sent_in_order = [("low-1", "low"), ("normal-1", None), ("high-1", "high"), ("low-2", "low"),
                         ("high-2", "high"), ("normal-2", "normal")]  # fmt: skip
        for name, priority in sent_in_order:
            send_task(actor=agent, alias="coder", task=name, priority=priority)
            clock.tick(1)
        messages = get_inbox(actor=agent, alias="coder")["messages"]

    assert [m["content"] for m in messages] == ["high-1", "high-2", "normal-1", "normal-2", "low-1", "low-2"]


def test_inbox_list_row_shape(agent, network):
    with freeze_time("2026-04-12 10:00:00"):
        sent = send_task(actor=agent, alias="coder", task="t", context="ctx", from_session="lead")
        (row,) = get_inbox(actor=agent, alias="coder")["messages"]

    assert set(row) == INBOX_ROW_KEYS
    assert row == {
        "id": sent["message_id"],
        "type": "task",
        "priority": "normal",
        "content": "t",
        "context": "ctx",
        "from_session": "lead",
        "task_id": sent["task_id"],
        "created_at": "2026-04-12T10:00:00.000Z",
        "network_id": network.id,
        "delivered_at": "2026-04-12T10:00:00.000Z",  # this read is the receipt
        "delivered_via": "get_inbox",
        "budget_usd": None,  # issue 25: the task's caps on a run (none given)
        "budget_tokens": None,
    }


@pytest.mark.parametrize(("limit", "expected"), [(None, 10), (3, 3), (100, 12)])
def test_inbox_list_limit(agent, limit, expected):
    with freeze_time("2026-04-12 10:00:00") as clock:
        for n in range(12):
            send_message(actor=agent, alias="coder", message=f"m{n:02}")
            clock.tick(1)
        messages = get_inbox(actor=agent, alias="coder", limit=limit)["messages"]

    assert [m["content"] for m in messages] == [f"m{n:02}" for n in range(expected)]


@pytest.mark.parametrize("limit", [101, 0, -1, True, "10", 2.5])
def test_inbox_list_refuses_a_bad_limit(agent, limit):
    refused_argument(lambda: get_inbox(actor=agent, alias="coder", limit=limit), "limit")


def test_inbox_list_shows_only_the_alias_own_messages_in_the_callers_networks(agent, outsider):
    mine = send_task(actor=agent, alias="coder", task="mine")["message_id"]
    send_task(actor=agent, alias="reviewer", task="not coder's")
    send_task(actor=outsider, alias="coder", task="another network's coder")

    assert [m["id"] for m in get_inbox(actor=agent, alias="coder")["messages"]] == [mine]
    assert [m["content"] for m in get_inbox(actor=outsider, alias="coder")["messages"]] == ["another network's coder"]
