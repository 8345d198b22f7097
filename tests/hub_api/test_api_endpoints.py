"""The REST API at /api/v1/: every tool as an endpoint, over real HTTP through Django's test client.

Bodies and results are the tools' own; refusals are `{"ok": false, "error": <code>, "message": ...}`
with the status that says why. Nothing here reaches into the database: the API itself is the witness.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpResponse
from django.test import Client

from hub_agents.models import Network
from hub_agents.services import membership_set, token_create, token_revoke
from tests.helpers.rest import assert_refused

# /mcp and the inbox endpoint run their database work through hub_core.waiting's pool: in these rolled-back
# tests it runs on the test's own thread and connection (tests/plugins/pool.py), so it sees the test's rows.
pytestmark = pytest.mark.django_db

API = "/api/v1/"
TASK_PLACEHOLDER = "{task}"


@dataclass
class Api:
    """One caller of the API: a client and the headers it sends."""

    client: Client
    headers: dict[str, str]

    def get(self, path: str, **query: Any) -> HttpResponse:
        return self.client.get(API + path, query, headers=self.headers)

    def post(self, path: str, body: Any = None, *, content_type: str = "application/json") -> HttpResponse:
        data = body if isinstance(body, str | bytes) else json.dumps({} if body is None else body)
        return self.client.post(API + path, data=data, content_type=content_type, headers=self.headers)

    def read(self, path: str, **query: Any) -> dict[str, Any]:
        response = self.get(path, **query)
        assert response.status_code == 200, response.content
        return response.json()

    def write(self, path: str, body: Any = None, *, status: int = 200) -> dict[str, Any]:
        response = self.post(path, body)
        assert response.status_code == status, response.content
        assert response.json()["ok"] is True
        return response.json()


def bearer(network: Network, role: str = "member") -> dict[str, str]:
    _, raw = token_create(network=network, role=role, name=f"{role}-api")
    return {"Authorization": f"Bearer {raw}"}


@pytest.fixture
def api(client: Client, network: Network) -> Api:
    return Api(client, bearer(network))


@pytest.fixture
def viewer_api(client: Client, network: Network) -> Api:
    return Api(client, bearer(network, "viewer"))


@pytest.fixture
def outsider_api(client: Client, other_network: Network) -> Api:
    return Api(client, bearer(other_network))


@pytest.fixture
def coder(api: Api) -> str:
    api.write("sessions/report", {"resume_id": "r-coder", "alias": "coder", "status": "idle", "server": "s1"})
    return "coder"


@pytest.fixture
def task_id(api: Api, coder: str) -> str:
    sent = api.write("tasks", {"alias": coder, "task": "fix the bug", "from_session": "lead"}, status=201)
    return sent["task_id"]


def send(api: Api, alias: str = "coder", task: str = "fix the bug", **fields: Any) -> str:
    return api.write("tasks", {"alias": alias, "task": task, "from_session": "lead", **fields}, status=201)["task_id"]


def status_of(api: Api, task_id: str) -> str:
    return api.read(f"tasks/{task_id}")["task"]["status"]


def inbox_ids(api: Api, alias: str) -> list[str]:
    return [message["id"] for message in api.read(f"sessions/{alias}/inbox")["messages"]]


def snapshot(api: Api, task_id: str) -> list[dict[str, Any]]:
    """Everything a write could have changed, as the API shows it. The inboxes first: reading one
    records its receipts (the task's first_read_at), which the task reads then show alike."""
    inboxes = [api.read(f"sessions/{alias}/inbox", limit=100) for alias in ("coder", "lead", "reviewer")]
    return [
        api.read("tasks", limit=100),
        api.read(f"tasks/{task_id}"),
        api.read("sessions"),
        api.read("completions"),
        *inboxes,
    ]


# Every write endpoint with a body that a member may send (used for viewers and outsiders).
WRITES: dict[str, tuple[str, dict[str, Any]]] = {
    "report_status": ("sessions/report", {"resume_id": "r-coder", "alias": "coder", "status": "working"}),
    "ack_inbox": ("sessions/coder/inbox/{task}/ack", {}),
    "report_completion": ("completions", {"alias": "coder", "task": TASK_PLACEHOLDER, "result": "done"}),
    "send_task": ("tasks", {"alias": "coder", "task": "another"}),
    "send_ack": ("tasks/{task}/ack", {}),
    "retry_task": ("tasks/{task}/retry", {}),
    "cancel_task": ("tasks/{task}/cancel", {}),
    "reassign_task": ("tasks/{task}/reassign", {"new_alias": "reviewer"}),
    "send_message": ("messages", {"alias": "coder", "message": "hello"}),
    "send_reply": ("replies", {"alias": "lead", "text": "done", "in_reply_to": TASK_PLACEHOLDER}),
    "broadcast": ("broadcasts", {"message": "everyone stop"}),
}

READS: dict[str, str] = {
    "get_all_status": "sessions",
    "get_session_status": "sessions/coder",
    "get_completions": "completions",
    "list_tasks": "tasks",
    "get_task": "tasks/{task}",
}


def filled(template: Any, task_id: str) -> Any:
    if isinstance(template, dict):
        return {key: filled(value, task_id) for key, value in template.items()}
    return template.replace(TASK_PLACEHOLDER, task_id) if isinstance(template, str) else template


# --- sessions ----------------------------------------------------------------------------------


def test_report_status_answers_the_alias_and_its_pending_inbox(api: Api, task_id: str) -> None:
    body = api.write("sessions/report", {"resume_id": "r-coder", "alias": "coder", "status": "idle"})

    assert body == {"ok": True, "resume_id": "r-coder", "alias": "coder", "inbox_count": 1}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"resume_id": "r", "alias": "coder"}, "status"),
        ({"resume_id": "r", "alias": "coder", "status": "sleeping"}, "status"),
        ({"resume_id": "r", "alias": "", "status": "idle"}, "alias"),
        ({"resume_id": "r", "alias": "coder", "status": "idle", "score": 11}, "score"),
    ],
)
def test_report_status_refuses_a_bad_argument_naming_it(api: Api, body: dict, field: str) -> None:
    assert_refused(api.post("sessions/report", body), 400, "invalid_argument", field=field)
    assert api.read("sessions")["sessions"] == []


def test_get_all_status_filters_by_status_and_server_and_counts_the_whole_scope(api: Api, coder: str) -> None:
    api.write("sessions/report", {"resume_id": "r-rev", "alias": "reviewer", "status": "working", "server": "s2"})

    everyone = api.read("sessions")
    working = api.read("sessions", filter_status="working")
    on_s1 = api.read("sessions", filter_server="s1")

    assert [row["alias"] for row in everyone["sessions"]] == ["coder", "reviewer"]
    assert [row["alias"] for row in working["sessions"]] == ["reviewer"]
    assert [row["alias"] for row in on_s1["sessions"]] == ["coder"]
    assert working["summary"] == [{"status": "idle", "count": 1}, {"status": "working", "count": 1}]


def test_get_all_status_refuses_an_unknown_status_filter(api: Api) -> None:
    assert_refused(api.get("sessions", filter_status="asleep"), 400, "invalid_argument", field="filter_status")


def test_get_session_status_shows_the_session_and_its_pending_inbox(api: Api, task_id: str) -> None:
    body = api.read("sessions/coder")

    assert body["ok"] is True
    assert body["session"]["alias"] == "coder"
    assert body["session"]["status"] == "idle"
    assert body["inbox_pending"] == 1
    assert body["recent_completions"] == []


def test_get_session_status_of_an_alias_that_never_reported_is_null_not_404(api: Api) -> None:
    assert api.read("sessions/nobody") == {"ok": True, "session": None, "inbox_pending": 0, "recent_completions": []}


def test_get_session_status_works_for_an_alias_named_report(api: Api) -> None:
    api.write("sessions/report", {"resume_id": "r-report", "alias": "report", "status": "idle"})

    assert api.read("sessions/report")["session"]["alias"] == "report"


# --- inbox ---------------------------------------------------------------------------------------


def test_get_inbox_lists_pending_messages_high_priority_first(api: Api, coder: str) -> None:
    normal = send(api, task="normal work")
    urgent = send(api, task="urgent work", priority="high")

    messages = api.read("sessions/coder/inbox")["messages"]
    first_only = api.read("sessions/coder/inbox", limit=1)["messages"]

    assert [(m["id"], m["type"], m["task_id"], m["priority"]) for m in messages] == [
        (urgent, "task", urgent, "high"),
        (normal, "task", normal, "normal"),
    ]
    assert [m["id"] for m in first_only] == [urgent]


@pytest.mark.parametrize("limit", ["abc", "0", "101", "1.5"])
def test_get_inbox_refuses_a_bad_limit(api: Api, limit: str) -> None:
    assert_refused(api.get("sessions/coder/inbox", limit=limit), 400, "invalid_argument", field="limit")


def test_ack_inbox_takes_the_message_and_acks_its_task(api: Api, task_id: str) -> None:
    body = api.write(f"sessions/coder/inbox/{task_id}/ack", {"response": "on it"})

    assert body == {"ok": True}
    assert inbox_ids(api, "coder") == []
    assert status_of(api, task_id) == "acked"


def test_ack_inbox_twice_is_a_conflict(api: Api, task_id: str) -> None:
    api.write(f"sessions/coder/inbox/{task_id}/ack")

    assert_refused(api.post(f"sessions/coder/inbox/{task_id}/ack"), 409, "message_already_acked")


@pytest.mark.parametrize("path", ["sessions/coder/inbox/no-such-id/ack", "sessions/reviewer/inbox/{task}/ack"])
def test_ack_inbox_of_an_unknown_or_someone_elses_message_is_404(api: Api, task_id: str, path: str) -> None:
    assert_refused(api.post(filled(path, task_id)), 404, "message_not_found")
    assert inbox_ids(api, "coder") == [task_id]


# --- completions ---------------------------------------------------------------------------------


def test_report_completion_records_the_result_and_closes_the_task(api: Api, task_id: str) -> None:
    body = api.write(
        "completions",
        {"alias": "coder", "task": task_id, "result": "fixed", "artifacts": ["fix.diff"], "score": 8},
        status=201,
    )

    assert body == {"ok": True, "completion_id": body["completion_id"], "task_id": task_id}
    assert isinstance(body["completion_id"], str) and body["completion_id"]
    task = api.read(f"tasks/{task_id}")["task"]
    assert (task["status"], task["result"]) == ("replied", "fixed")
    (row,) = api.read("completions")["completions"]
    assert (row["id"], row["session_name"], row["task"], row["result"], row["artifacts"], row["score"]) == (
        body["completion_id"],
        "coder",
        task_id,
        "fixed",
        '["fix.diff"]',
        8.0,
    )


def test_report_completion_of_an_unknown_task_is_recorded_without_a_task(api: Api, coder: str) -> None:
    body = api.write("completions", {"alias": "coder", "task": "something unplanned", "result": "ok"}, status=201)

    assert body["task_id"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"alias": "coder", "task": "t"}, "result"),
        ({"alias": "coder", "task": "t", "result": "r", "artifacts": "a.txt"}, "artifacts"),
        ({"alias": "coder", "task": "t", "result": "r", "duration_minutes": -1}, "duration_minutes"),
    ],
)
def test_report_completion_refuses_a_bad_argument_naming_it(api: Api, body: dict, field: str) -> None:
    assert_refused(api.post("completions", body), 400, "invalid_argument", field=field)
    assert api.read("completions")["completions"] == []


def test_get_completions_filters_by_alias_and_since(api: Api, coder: str) -> None:
    api.write("completions", {"alias": "coder", "task": "a", "result": "r1"}, status=201)
    api.write("completions", {"alias": "reviewer", "task": "b", "result": "r2"}, status=201)

    assert [row["result"] for row in api.read("completions")["completions"]] == ["r2", "r1"]
    assert [row["result"] for row in api.read("completions", alias="coder")["completions"]] == ["r1"]
    assert api.read("completions", since="2999-01-01T00:00:00Z")["completions"] == []


@pytest.mark.parametrize(("query", "field"), [({"since": "yesterday"}, "since"), ({"limit": "501"}, "limit")])
def test_get_completions_refuses_a_bad_query(api: Api, query: dict, field: str) -> None:
    assert_refused(api.get("completions", **query), 400, "invalid_argument", field=field)


# --- send_task / list_tasks / get_task -----------------------------------------------------------


def test_send_task_answers_201_with_the_task_and_the_receivers_status(api: Api, coder: str) -> None:
    body = api.write("tasks", {"alias": "coder", "task": "fix the bug"}, status=201)

    assert body == {"ok": True, "task_id": body["task_id"], "message_id": body["task_id"], "session_status": "idle"}
    assert inbox_ids(api, "coder") == [body["task_id"]]


def test_send_task_to_an_alias_that_never_reported_warns(api: Api) -> None:
    body = api.write("tasks", {"alias": "ghost", "task": "hello?"}, status=201)

    assert body["session_status"] is None
    assert "ghost" in body["warning"]


def test_send_task_repeat_with_the_same_client_request_id_is_200_duplicate(api: Api, coder: str) -> None:
    first = send(api, client_request_id="req-1")

    response = api.post(
        "tasks", {"alias": "coder", "task": "fix the bug", "from_session": "lead", "client_request_id": "req-1"}
    )

    assert response.status_code == 200
    assert response.json() == {
        "ok": True,
        "task_id": first,
        "message_id": first,
        "duplicate": True,
        "session_status": "idle",
    }
    assert api.read("tasks")["count"] == 1


def test_send_task_reusing_a_client_request_id_for_another_task_is_a_conflict(api: Api, coder: str) -> None:
    first = send(api, client_request_id="req-1")

    response = api.post("tasks", {"alias": "coder", "task": "something else", "client_request_id": "req-1"})

    assert_refused(response, 409, "idempotency_conflict", task_id=first)
    assert api.read("tasks")["count"] == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"task": "t"}, "alias"),
        ({"alias": "coder", "task": "x" * 10_001}, "task"),
        ({"alias": "coder", "task": "   "}, "task"),
        ({"alias": "coder", "task": "t", "priorty": "high"}, "priorty"),
        ({"alias": "coder", "task": "t", "priority": "urgent"}, "priority"),
        ({"alias": "coder", "task": "t", "ttl_seconds": 0}, "ttl_seconds"),
        ({"alias": "coder", "task": "t", "ttl_seconds": "60"}, "ttl_seconds"),
    ],
)
def test_send_task_refuses_a_bad_argument_naming_it(api: Api, body: dict, field: str) -> None:
    assert_refused(api.post("tasks", body), 400, "invalid_argument", field=field)
    assert api.read("tasks")["count"] == 0


def test_send_task_under_an_unknown_parent_is_404(api: Api) -> None:
    response = api.post("tasks", {"alias": "coder", "task": "t", "parent_task_id": "no-such-task"})

    assert_refused(response, 404, "parent_task_not_found")
    assert api.read("tasks")["count"] == 0


def test_list_tasks_filters_and_counts_the_whole_scope(api: Api, coder: str) -> None:
    to_coder = send(api, alias="coder", task="one")
    to_reviewer = send(api, alias="reviewer", task="two", from_session="boss")
    api.write(f"tasks/{to_coder}/cancel")

    everything = api.read("tasks")
    by_alias = api.read("tasks", alias="reviewer")
    by_status = api.read("tasks", status="cancelled")
    by_sender = api.read("tasks", from_name="boss")
    newest = api.read("tasks", limit=1)

    assert [row["task_id"] for row in everything["tasks"]] == [to_reviewer, to_coder]
    assert everything["count"] == 2
    assert [row["task_id"] for row in by_alias["tasks"]] == [to_reviewer]
    assert [row["task_id"] for row in by_status["tasks"]] == [to_coder]
    assert [row["task_id"] for row in by_sender["tasks"]] == [to_reviewer]
    assert (newest["count"], newest["stats"]) == (
        1,
        [{"status": "cancelled", "count": 1}, {"status": "delivered", "count": 1}],
    )


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"limit": "abc"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": ["5", "6"]}, "limit"),
        ({"status": "done"}, "status"),
        ({"priority": "high"}, "priority"),
    ],
)
def test_list_tasks_refuses_a_bad_query_naming_the_parameter(api: Api, query: dict, field: str) -> None:
    assert_refused(api.get("tasks", **query), 400, "invalid_argument", field=field)


def test_get_task_shows_the_whole_task_and_its_events(api: Api, task_id: str) -> None:
    body = api.read(f"tasks/{task_id}")

    assert body["ok"] is True
    task = body["task"]
    assert (task["task_id"], task["to_name"], task["from_name"], task["status"], task["content"]) == (
        task_id,
        "coder",
        "lead",
        "delivered",
        "fix the bug",
    )
    assert [(e["from_status"], e["to_status"]) for e in body["events"]] == [(None, "delivered")]


def test_get_task_of_an_unknown_id_is_404(api: Api) -> None:
    assert_refused(api.get("tasks/no-such-task"), 404, "task_not_found")


# --- task actions --------------------------------------------------------------------------------


def test_send_ack_acks_once_then_reports_nothing_to_do(api: Api, task_id: str) -> None:
    first = api.write(f"tasks/{task_id}/ack", {"from_session": "coder"})
    second = api.write(f"tasks/{task_id}/ack")

    assert first == {"ok": True, "task_id": task_id, "updated": 1}
    assert second == {"ok": True, "task_id": task_id, "updated": 0}
    assert status_of(api, task_id) == "acked"


def test_send_ack_of_a_finished_task_is_a_conflict(api: Api, task_id: str) -> None:
    api.write(f"tasks/{task_id}/cancel")

    assert_refused(api.post(f"tasks/{task_id}/ack"), 409, "task_terminal", updated=0)


def test_a_bodyless_post_runs_an_action_whose_arguments_are_all_in_the_path(
    client: Client, api: Api, task_id: str
) -> None:
    response = client.generic("POST", f"{API}tasks/{task_id}/ack", headers=api.headers)

    assert response.status_code == 200, response.content
    assert response.json() == {"ok": True, "task_id": task_id, "updated": 1}


def test_retry_task_sends_a_cancelled_task_again(api: Api, task_id: str) -> None:
    api.write(f"tasks/{task_id}/cancel")

    body = api.write(f"tasks/{task_id}/retry")

    assert body == {"ok": True, "task_id": task_id, "retried_to": "coder", "message_id": body["message_id"]}
    assert inbox_ids(api, "coder") == [body["message_id"]]
    assert status_of(api, task_id) == "delivered"


def test_retry_of_a_delivered_task_is_a_conflict(api: Api, task_id: str) -> None:
    assert_refused(api.post(f"tasks/{task_id}/retry"), 409, "task_not_retryable")
    assert [e["to_status"] for e in api.read(f"tasks/{task_id}")["events"]] == ["delivered"]


def test_cancel_task_cancels_and_withdraws_it_from_the_inbox(api: Api, task_id: str) -> None:
    body = api.write(f"tasks/{task_id}/cancel", {"reason": "not needed"})

    assert body == {"ok": True, "task_id": task_id, "cancelled": True}
    assert inbox_ids(api, "coder") == []
    assert api.read(f"tasks/{task_id}")["events"][-1]["detail"] == "cancelled by hub: not needed"


def test_cancel_of_a_replied_task_is_a_conflict_saying_not_cancelled(api: Api, task_id: str) -> None:
    api.write("replies", {"alias": "lead", "text": "done", "in_reply_to": task_id}, status=201)

    assert_refused(api.post(f"tasks/{task_id}/cancel"), 409, "task_terminal", cancelled=False, task_id=task_id)
    assert status_of(api, task_id) == "replied"


def test_cancel_refuses_a_reason_over_the_limit(api: Api, task_id: str) -> None:
    assert_refused(api.post(f"tasks/{task_id}/cancel", {"reason": "x" * 1001}), 400, "invalid_argument", field="reason")
    assert status_of(api, task_id) == "delivered"


def test_reassign_task_moves_it_to_the_new_alias(api: Api, task_id: str) -> None:
    body = api.write(f"tasks/{task_id}/reassign", {"new_alias": "reviewer"})

    assert body == {
        "ok": True,
        "task_id": task_id,
        "reassigned_from": "coder",
        "reassigned_to": "reviewer",
        "message_id": body["message_id"],
        "session_status": None,
        "warning": body["warning"],
    }
    assert inbox_ids(api, "coder") == []
    assert inbox_ids(api, "reviewer") == [body["message_id"]]
    assert api.read(f"tasks/{task_id}")["task"]["to_name"] == "reviewer"


def test_reassign_refuses_a_missing_new_alias_and_a_finished_task(api: Api, task_id: str) -> None:
    assert_refused(api.post(f"tasks/{task_id}/reassign"), 400, "invalid_argument", field="new_alias")
    api.write(f"tasks/{task_id}/cancel")
    assert_refused(api.post(f"tasks/{task_id}/reassign", {"new_alias": "reviewer"}), 409, "task_terminal")
    assert inbox_ids(api, "reviewer") == []


@pytest.mark.parametrize("action", ["ack", "retry", "cancel", "reassign"])
def test_actions_on_an_unknown_task_are_404(api: Api, action: str) -> None:
    assert_refused(
        api.post(f"tasks/no-such-task/{action}", {"new_alias": "x"} if action == "reassign" else {}),
        404,
        "task_not_found",
    )


# --- messages, replies, broadcasts ---------------------------------------------------------------


def test_send_message_answers_201_and_shows_in_the_inbox(api: Api, coder: str) -> None:
    body = api.write("messages", {"alias": "coder", "message": "lunch?", "from_session": "lead"}, status=201)

    assert body == {"ok": True, "message_id": body["message_id"], "session_status": "idle"}
    (message,) = api.read("sessions/coder/inbox")["messages"]
    assert (message["id"], message["type"], message["content"], message["from_session"]) == (
        body["message_id"],
        "message",
        "lunch?",
        "lead",
    )


def test_send_message_refuses_a_missing_message(api: Api, coder: str) -> None:
    assert_refused(api.post("messages", {"alias": "coder"}), 400, "invalid_argument", field="message")
    assert inbox_ids(api, "coder") == []


@pytest.mark.parametrize("outcome", ["replied", "failed"])
def test_send_reply_ends_the_task_and_reaches_the_sender(api: Api, task_id: str, outcome: str) -> None:
    body = api.write(
        "replies",
        {"alias": "lead", "text": "answer", "in_reply_to": task_id, "status": outcome, "from_session": "coder"},
        status=201,
    )

    assert set(body) >= {"ok", "message_id", "session_status"}
    (reply,) = api.read("sessions/lead/inbox")["messages"]
    assert (reply["id"], reply["type"], reply["content"], reply["task_id"]) == (
        body["message_id"],
        "reply",
        "answer",
        task_id,
    )
    task = api.read(f"tasks/{task_id}")["task"]
    assert (task["status"], task["result"]) == (outcome, "answer")


def test_send_reply_to_a_finished_task_is_a_conflict(api: Api, task_id: str) -> None:
    api.write("replies", {"alias": "lead", "text": "first", "in_reply_to": task_id}, status=201)

    response = api.post("replies", {"alias": "lead", "text": "second", "in_reply_to": task_id})

    assert_refused(response, 409, "task_terminal")
    assert [m["content"] for m in api.read("sessions/lead/inbox")["messages"]] == ["first"]


def test_send_reply_to_an_unknown_task_is_404(api: Api) -> None:
    assert_refused(
        api.post("replies", {"alias": "lead", "text": "?", "in_reply_to": "no-such-task"}), 404, "task_not_found"
    )


def test_broadcast_reaches_every_online_agent_matching_the_filter(api: Api, coder: str) -> None:
    api.write("sessions/report", {"resume_id": "r-rev", "alias": "reviewer", "status": "idle", "server": "s2"})

    everyone = api.write("broadcasts", {"message": "deploy at 5"}, status=201)
    only_s1 = api.write("broadcasts", {"message": "s1 reboot", "filter_server": "s1"}, status=201)

    assert everyone["recipients"] == 2 and len(everyone["message_ids"]) == 2
    assert only_s1 == {"ok": True, "recipients": 1, "message_ids": only_s1["message_ids"]}
    assert [m["content"] for m in api.read("sessions/coder/inbox")["messages"]] == ["deploy at 5", "s1 reboot"]
    assert [m["content"] for m in api.read("sessions/reviewer/inbox")["messages"]] == ["deploy at 5"]


def test_broadcast_refuses_a_missing_message(api: Api) -> None:
    assert_refused(api.post("broadcasts", {"filter_server": "s1"}), 400, "invalid_argument", field="message")


# --- request refusals common to all endpoints ----------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "arguments", "field"),
    [
        ("post", "tasks/{task}/cancel", {"task_id": "{task}"}, "task_id"),
        ("post", "tasks/{task}/reassign", {"task_id": "{task}", "new_alias": "reviewer"}, "task_id"),
        ("post", "sessions/coder/inbox/{task}/ack", {"alias": "coder"}, "alias"),
        ("get", "sessions/coder/inbox", {"alias": "coder"}, "alias"),
        ("get", "tasks/{task}", {"task_id": "{task}"}, "task_id"),
    ],
)
def test_an_argument_given_both_in_the_path_and_the_request_is_refused(
    api: Api, task_id: str, method: str, path: str, arguments: dict, field: str
) -> None:
    url, arguments = filled(path, task_id), filled(arguments, task_id)
    response = api.post(url, arguments) if method == "post" else api.get(url, **arguments)

    assert_refused(response, 400, "invalid_argument", field=field)
    assert status_of(api, task_id) == "delivered"


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("{", "invalid_json"),
        ("\n", "invalid_json"),
        ('{"alias": "coder", "task": "t"', "invalid_json"),
        (b"\xff\xfe", "invalid_json"),
        ("[1, 2]", "invalid_json"),
        ('"fix the bug"', "invalid_json"),
        ("null", "invalid_json"),
        ("[" * 100_000 + "]" * 100_000, "invalid_json"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_400(api: Api, body: str | bytes, error: str) -> None:
    assert_refused(api.post("tasks", body), 400, error)
    assert api.read("tasks")["count"] == 0


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
@pytest.mark.parametrize("tool", sorted(WRITES))
def test_a_non_json_content_type_is_415(api: Api, task_id: str, tool: str, content_type: str) -> None:
    path, body = WRITES[tool]
    before = snapshot(api, task_id)

    response = api.post(filled(path, task_id), json.dumps(filled(body, task_id)), content_type=content_type)

    assert_refused(response, 415, "unsupported_media_type")
    assert snapshot(api, task_id) == before


def test_a_body_over_the_size_limit_is_413_and_one_at_the_limit_is_accepted(api: Api, settings) -> None:
    settings.COMMHUB_MAX_REQUEST_BYTES = 1024
    shell = json.dumps({"alias": "coder", "task": ""})

    at_limit = api.post("tasks", json.dumps({"alias": "coder", "task": "x" * (1024 - len(shell))}))
    over_limit = api.post("tasks", json.dumps({"alias": "coder", "task": "x" * (1025 - len(shell))}))

    assert at_limit.status_code == 201, at_limit.content
    assert_refused(over_limit, 413, "request_too_large")
    assert api.read("tasks")["count"] == 1


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("put", "tasks/t-1", {"GET", "HEAD", "OPTIONS"}),
        ("delete", "tasks", {"GET", "POST", "HEAD", "OPTIONS"}),
        ("get", "messages", {"POST", "OPTIONS"}),
        ("post", "sessions", {"GET", "HEAD", "OPTIONS"}),
        ("patch", "tasks/t-1/cancel", {"POST", "OPTIONS"}),
    ],
)
def test_a_wrong_method_is_405_with_an_allow_header(api: Api, method: str, path: str, allowed: set[str]) -> None:
    response = api.client.generic(
        method.upper(), API + path, "{}", content_type="application/json", headers=api.headers
    )

    assert_refused(response, 405, "method_not_allowed")
    assert {item.strip() for item in response["Allow"].split(",")} == allowed


@pytest.mark.parametrize("path", ["nope", "tasks/t-1/archive", "sessions/coder/inbox/m-1", "v2/tasks", "tasks/"])
def test_an_unknown_api_path_is_a_json_404(api: Api, path: str) -> None:
    assert_refused(api.get(path), 404, "not_found")
    assert_refused(api.post(path, {}), 404, "not_found")


def test_an_unknown_api_path_is_a_json_404_for_a_post_from_a_real_client(api: Api) -> None:
    real_client = Api(Client(enforce_csrf_checks=True), api.headers)

    assert_refused(real_client.post("tasks/t-1/archive", {}), 404, "not_found")


def test_a_bearer_client_needs_no_csrf_token(api: Api, coder: str) -> None:
    real_client = Api(Client(enforce_csrf_checks=True), api.headers)

    real_client.write("tasks", {"alias": "coder", "task": "t"}, status=201)

    assert api.read("tasks")["count"] == 1


# Odd input anywhere must be refused as a 4xx with the error shape, never crash into a 500.
@pytest.mark.parametrize(
    ("method", "path", "payload"),
    [
        ("get", "tasks/%00", {}),
        ("get", "tasks/" + "x" * 300, {}),
        ("get", "sessions/%00", {}),
        ("get", "completions", {"since": "2026-04-12T10:00:00+99:00"}),
        ("get", "completions", {"since": "2026-13-45"}),
        ("get", "tasks", {"limit": "99999999999999999999999"}),
        ("get", "tasks", {"limit": ""}),
        ("get", "sessions", {"network_id": "\x00"}),
        ("post", "tasks", '{"alias": "coder", "task": "t", "ttl_seconds": 1e400}'),
        ("post", "tasks", '{"alias": "coder", "task": "t", "ttl_seconds": NaN}'),
        ("post", "tasks", {"alias": {"nested": True}, "task": "t"}),
        ("post", "tasks", {"alias": "coder", "task": "t", "priority": ["high"]}),
        ("post", "tasks", {"alias": "coder", "task": "t\u0000"}),
        ("post", "sessions/report", {"resume_id": "r", "alias": "a", "status": "idle", "channels": "[1]"}),
        ("post", "sessions/report", {"resume_id": "r", "alias": "a", "status": "idle", "progress": True}),
        ("post", "completions", {"alias": "a", "task": "t", "result": "r", "artifacts": [1]}),
        ("post", "completions", {"alias": "a", "task": "t", "result": "r", "score": "high"}),
        ("post", "replies", {"alias": "a", "text": "t", "status": "expired"}),
        ("post", "broadcasts", {"message": "m", "filter_status": 3}),
        ("post", "tasks/%00/cancel", {}),
    ],
)
def test_odd_input_is_a_4xx_with_the_error_shape(api: Api, method: str, path: str, payload: Any) -> None:
    response = api.post(path, payload) if method == "post" else api.get(path, **payload)

    assert 400 <= response.status_code < 500, response.content
    assert set(response.json()) >= {"ok", "error", "message"}
    assert response.json()["ok"] is False


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("tasks", '{"alias": "coder", "task": "\\ud800"}', "task"),
        ("messages", '{"alias": "\\udfff", "message": "hi"}', "alias"),
        ("completions", '{"alias": "coder", "task": "t", "result": "r", "artifacts": ["\\ud800"]}', "artifacts[0]"),
        (
            "sessions/report",
            '{"resume_id": "r", "alias": "a", "status": "idle", "channels": "[\\"\\ud800\\"]"}',
            "channels",
        ),
    ],
)
def test_a_lone_surrogate_in_a_json_string_is_a_400_not_a_500(api: Api, path: str, body: str, field: str) -> None:
    api.client.raise_request_exception = False

    assert_refused(api.post(path, body), 400, "invalid_argument", field=field)


@pytest.mark.parametrize("since", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_get_completions_since_at_the_edge_of_time_is_a_409_not_a_500(api: Api, since: str) -> None:
    """A date-time its schema admits, which no UTC time is: schema-valid, so 409 (schemathesis ST202)."""
    api.client.raise_request_exception = False

    assert_refused(api.get("completions", since=since), 409, "invalid_argument", field="since")


# --- authentication and permissions --------------------------------------------------------------


ALL_ENDPOINTS = [("post", path) for path, _ in WRITES.values()] + [("get", path) for path in READS.values()]


@pytest.mark.parametrize("credential", ["none", "unknown", "revoked", "empty", "basic"])
@pytest.mark.parametrize(("method", "path"), ALL_ENDPOINTS)
def test_every_endpoint_refuses_a_missing_or_bad_token_with_a_bearer_challenge(
    client: Client, network: Network, method: str, path: str, credential: str
) -> None:
    token, raw = token_create(network=network, role="member")
    token_revoke(token=token)
    headers = {
        "none": {},
        "unknown": {"Authorization": "Bearer ntok_not-a-real-token"},
        "revoked": {"Authorization": f"Bearer {raw}"},
        "empty": {"Authorization": "Bearer "},
        "basic": {"Authorization": "Basic dXNlcjpwYXNz"},
    }[credential]
    url = API + filled(path, "t-1")

    response = (
        client.post(url, "{}", content_type="application/json", headers=headers)
        if method == "post"
        else client.get(url, headers=headers)
    )

    assert_refused(response, 401, "unauthorized")
    assert response["WWW-Authenticate"] == 'Bearer realm="commhub"'


@pytest.mark.parametrize("tool", sorted(WRITES))
def test_a_viewer_token_may_not_write(api: Api, viewer_api: Api, task_id: str, tool: str) -> None:
    api.write("sessions/report", {"resume_id": "r-rev", "alias": "reviewer", "status": "idle"})
    path, body = WRITES[tool]
    before = snapshot(api, task_id)

    response = viewer_api.post(filled(path, task_id), filled(body, task_id))

    assert_refused(response, 403, "permission_denied")
    assert snapshot(api, task_id) == before


@pytest.mark.parametrize("tool", sorted(READS))
def test_a_viewer_token_may_read(viewer_api: Api, task_id: str, tool: str) -> None:
    assert viewer_api.read(filled(READS[tool], task_id))["ok"] is True


def test_a_viewer_has_no_inbox_to_read(viewer_api: Api, task_id: str) -> None:
    # Naming an agent lends a viewer nothing (hub_agents.identity): get_inbox is the agent's own read.
    assert_refused(viewer_api.get("sessions/coder/inbox"), 403, "alias_not_yours")


def test_a_viewer_sees_what_members_sent(viewer_api: Api, task_id: str) -> None:
    assert [row["task_id"] for row in viewer_api.read("tasks")["tasks"]] == [task_id]


# --- network isolation ---------------------------------------------------------------------------


@pytest.fixture
def busy_network(api: Api, task_id: str) -> str:
    """`network` with a session, a pending task, a message and a completion in it."""
    api.write("messages", {"alias": "coder", "message": "hello"}, status=201)
    api.write("completions", {"alias": "coder", "task": "earlier work", "result": "ok"}, status=201)
    return task_id


@pytest.mark.parametrize(
    ("path", "empty"),
    [
        ("sessions", {"ok": True, "sessions": [], "summary": []}),
        ("tasks", {"ok": True, "tasks": [], "count": 0, "stats": []}),
        ("completions", {"ok": True, "completions": []}),
        ("sessions/coder/inbox", {"ok": True, "messages": []}),
        ("sessions/coder", {"ok": True, "session": None, "inbox_pending": 0, "recent_completions": []}),
    ],
)
def test_an_outsider_lists_nothing_of_another_network(
    outsider_api: Api, busy_network: str, path: str, empty: dict
) -> None:
    assert outsider_api.read(path) == empty


def test_an_outsider_cannot_get_another_networks_task(outsider_api: Api, busy_network: str) -> None:
    assert_refused(outsider_api.get(f"tasks/{busy_network}"), 404, "task_not_found")


@pytest.mark.parametrize(
    ("path", "body", "error"),
    [
        ("tasks/{task}/ack", {}, "task_not_found"),
        ("tasks/{task}/retry", {}, "task_not_found"),
        ("tasks/{task}/cancel", {}, "task_not_found"),
        ("tasks/{task}/reassign", {"new_alias": "mole"}, "task_not_found"),
        ("replies", {"alias": "lead", "text": "mine now", "in_reply_to": "{task}"}, "task_not_found"),
        ("sessions/coder/inbox/{task}/ack", {}, "message_not_found"),
    ],
)
def test_an_outsider_cannot_act_on_another_networks_task_or_message(
    api: Api, outsider_api: Api, busy_network: str, path: str, body: dict, error: str
) -> None:
    before = snapshot(api, busy_network)

    response = outsider_api.post(filled(path, busy_network), filled(body, busy_network))

    assert_refused(response, 404, error)
    assert snapshot(api, busy_network) == before


@pytest.mark.parametrize(
    ("method", "path", "payload"),
    [
        ("get", "sessions", {}),
        ("get", "tasks", {}),
        ("get", "completions", {}),
        ("get", "sessions/coder/inbox", {}),
        ("get", "sessions/coder", {}),
        ("post", "tasks", {"alias": "coder", "task": "sneaky"}),
        ("post", "messages", {"alias": "coder", "message": "sneaky"}),
        ("post", "broadcasts", {"message": "sneaky"}),
    ],
)
def test_naming_another_networks_id_is_403(
    api: Api, outsider_api: Api, network: Network, busy_network: str, method: str, path: str, payload: dict
) -> None:
    before = snapshot(api, busy_network)
    payload = {**payload, "network_id": network.pk}

    response = outsider_api.post(path, payload) if method == "post" else outsider_api.get(path, **payload)

    assert_refused(response, 403, "permission_denied")
    assert snapshot(api, busy_network) == before


# --- the dashboard: a signed-in user -------------------------------------------------------------


CSRF_SECRET = "a" * 32


@pytest.fixture
def operator(django_user_model, network: Network) -> AbstractBaseUser:
    user = django_user_model.objects.create_user(username="operator", password="unused-in-tests")
    membership_set(user=user, network=network, role="member")
    return user


@pytest.fixture
def dashboard(operator: AbstractBaseUser) -> Client:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(operator)
    return browser


def test_a_signed_in_user_reads_through_the_session(dashboard: Client, task_id: str) -> None:
    response = dashboard.get(f"{API}tasks")

    assert response.status_code == 200
    assert [row["task_id"] for row in response.json()["tasks"]] == [task_id]


def test_a_signed_in_user_writes_with_a_csrf_token(dashboard: Client, api: Api, task_id: str) -> None:
    dashboard.cookies["csrftoken"] = CSRF_SECRET

    response = dashboard.post(
        f"{API}tasks/{task_id}/cancel", "{}", content_type="application/json", headers={"X-CSRFToken": CSRF_SECRET}
    )

    assert response.status_code == 200, response.content
    assert response.json() == {"ok": True, "task_id": task_id, "cancelled": True}
    assert api.read(f"tasks/{task_id}")["events"][-1]["actor"] == "user:operator"


@pytest.mark.parametrize("csrf", ["none", "wrong"])
def test_a_signed_in_user_without_a_valid_csrf_token_may_not_write(
    dashboard: Client, api: Api, task_id: str, csrf: str
) -> None:
    headers = {}
    if csrf == "wrong":
        dashboard.cookies["csrftoken"] = CSRF_SECRET
        headers = {"X-CSRFToken": "b" * 32}

    response = dashboard.post(f"{API}tasks/{task_id}/cancel", "{}", content_type="application/json", headers=headers)

    assert_refused(response, 403, "permission_denied")
    assert status_of(api, task_id) == "delivered"


def test_a_signed_in_user_must_use_a_network_token_to_report_status(dashboard: Client, api: Api) -> None:
    dashboard.cookies["csrftoken"] = CSRF_SECRET

    response = dashboard.post(
        f"{API}sessions/report",
        json.dumps({"resume_id": "r", "alias": "me", "status": "idle"}),
        content_type="application/json",
        headers={"X-CSRFToken": CSRF_SECRET},
    )

    assert_refused(response, 403, "network_token_required")
    assert api.read("sessions")["sessions"] == []


# --- a whole task over REST ----------------------------------------------------------------------


def test_a_subtask_travels_the_whole_way_and_its_result_goes_up_the_chain(api: Api) -> None:
    api.write("sessions/report", {"resume_id": "r-lead", "alias": "lead", "status": "working"})
    api.write("sessions/report", {"resume_id": "r-coder", "alias": "coder", "status": "idle"})
    parent = api.write("tasks", {"alias": "planner", "task": "ship v2", "from_session": "lead"}, status=201)["task_id"]
    child = api.write(
        "tasks",
        {"alias": "coder", "task": "write the code", "from_session": "planner", "parent_task_id": parent},
        status=201,
    )["task_id"]

    (message,) = api.read("sessions/coder/inbox")["messages"]
    assert (message["id"], message["type"], message["content"]) == (child, "task", "write the code")
    assert api.write(f"sessions/coder/inbox/{child}/ack") == {"ok": True}
    working = {"resume_id": "r-coder", "alias": "coder", "status": "working", "task": child, "progress": 50}
    assert api.write("sessions/report", working)["inbox_count"] == 0
    assert api.read("sessions/coder")["session"]["status"] == "working"
    done = api.write("completions", {"alias": "coder", "task": child, "result": "code written"}, status=201)

    assert done["task_id"] == child
    record = api.read(f"tasks/{child}")
    assert (record["task"]["status"], record["task"]["result"], record["task"]["parent_task_id"]) == (
        "replied",
        "code written",
        parent,
    )
    assert [(e["from_status"], e["to_status"]) for e in record["events"]] == [
        (None, "delivered"),
        ("delivered", "acked"),
        ("acked", "running"),
        ("running", "replied"),
    ]
    assert api.read("sessions/coder")["session"]["status"] == "idle"
    (chained,) = api.read("sessions/lead/inbox")["messages"]
    assert (chained["type"], chained["content"], chained["task_id"], chained["from_session"]) == (
        "chained_reply",
        "code written",
        parent,
        "coder",
    )
    assert [row["task"] for row in api.read("completions", alias="coder")["completions"]] == [child]


@pytest.mark.parametrize("text", ["1.2832076732015799e-149", "0E0", "1e-3"])
def test_a_number_in_the_query_may_use_an_exponent_as_json_does(api: Api, task_id: str, text: str) -> None:
    """The schema says `number`: whatever JSON writes as a number is one (Schemathesis sends these)."""
    assert api.read("sessions/coder/inbox", wait_seconds=text)["messages"][0]["id"] == task_id
