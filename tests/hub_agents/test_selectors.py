"""The reads: get_all_status, get_session_status, list_tasks, get_task and get_completions."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from freezegun import freeze_time

from tests.helpers import refused
from tests.helpers.calls import (
    ack_inbox,
    get_all_status,
    get_completions,
    get_session_status,
    get_task,
    list_tasks,
    report_completion,
    send_message,
    send_reply,
    send_task,
)

START = "2026-04-12T10:00:00Z"
SESSION_KEYS = {
    "resume_id", "alias", "status", "task", "output", "score", "progress", "server", "hostname", "agent",
    "project_dir", "version", "tmux_name", "node_id", "session_id", "config_path", "channels", "model",
    "network_id", "last_seen_at",
}  # fmt: skip
COMPLETION_KEYS = [
    "id", "session_name", "task", "result", "artifacts", "score", "duration_minutes", "network_id", "completed_at",
]  # fmt: skip
TASK_LIST_KEYS = [
    "task_id", "from_name", "to_name", "priority", "status", "content", "result", "created_at", "completed_at",
]  # fmt: skip


def statuses(result: dict) -> dict[str, str]:
    return {row["alias"]: row["status"] for row in result["sessions"]}


def summary(result: dict) -> dict[str, int]:
    return {row["status"]: row["count"] for row in result["summary"]}


# --- get_all_status -------------------------------------------------------------------------------


def test_session_rows_carry_every_session_column_including_model(agent, online, network):
    online("coder", status="working", model="your-model-id", server="srv-1", agent="agent-node:codex-sdk")
    [row] = get_all_status(actor=agent)["sessions"]
    assert SESSION_KEYS <= set(row)
    assert (row["model"], row["server"], row["network_id"]) == ("your-model-id", "srv-1", network.id)
    assert row["last_seen_at"].endswith("Z")


def test_model_is_null_when_never_sent(agent, online):
    online("coder")
    assert get_all_status(actor=agent)["sessions"][0]["model"] is None


def test_stale_session_reads_offline_until_it_reports_again(agent, online):
    with freeze_time(START) as frozen:
        online("coder", status="working")
        online("tester", status="idle")
        frozen.tick(settings.COMMHUB_OFFLINE_AFTER_SECONDS)
        online("tester", status="idle")
        assert statuses(get_all_status(actor=agent)) == {"coder": "working", "tester": "idle"}
        frozen.tick(1)
        assert statuses(get_all_status(actor=agent)) == {"coder": "offline", "tester": "idle"}
        assert get_session_status(actor=agent, alias="coder")["session"]["status"] == "offline"
        assert send_task(actor=agent, alias="coder", task="anyone there?")["session_status"] == "offline"
        online("coder", status="working")
        assert statuses(get_all_status(actor=agent))["coder"] == "working"
        assert get_session_status(actor=agent, alias="coder")["session"]["status"] == "working"
        assert send_task(actor=agent, alias="coder", task="welcome back")["session_status"] == "working"


def test_offline_after_setting_is_600_seconds():
    assert settings.COMMHUB_OFFLINE_AFTER_SECONDS == 600


@pytest.fixture
def fleet(online):
    with freeze_time(START) as frozen:
        online("stale", status="idle", server="srv-1")
        frozen.tick(settings.COMMHUB_OFFLINE_AFTER_SECONDS + 1)
        online("coder", status="working", server="srv-1")
        online("tester", status="idle", server="srv-2")
        online("writer", status="idle", server="srv-1")
        yield frozen


@pytest.mark.parametrize(
    ("filters", "aliases"),
    [
        ({"filter_status": "idle"}, {"tester", "writer"}),
        ({"filter_status": "working"}, {"coder"}),
        ({"filter_status": "offline"}, {"stale"}),
        ({"filter_server": "srv-1"}, {"stale", "coder", "writer"}),
        ({"filter_server": "srv-1", "filter_status": "idle"}, {"writer"}),
        ({"filter_server": "srv-9"}, set()),
    ],
)
def test_filters_select_sessions(agent, fleet, filters, aliases):
    assert set(statuses(get_all_status(actor=agent, **filters))) == aliases


@pytest.mark.parametrize("filters", [{}, {"filter_status": "working"}, {"filter_server": "srv-2"}])
def test_summary_counts_the_whole_scope_whatever_the_filters(agent, fleet, filters):
    assert summary(get_all_status(actor=agent, **filters)) == {"idle": 2, "working": 1, "offline": 1}


@pytest.mark.parametrize("bad", ["busy", "IDLE", 1])
def test_bad_filter_status_is_refused(agent, bad):
    error = refused(get_all_status, actor=agent, filter_status=bad)
    assert (error.code, error.extra["field"]) == ("invalid_argument", "filter_status")


# --- get_session_status ---------------------------------------------------------------------------


def test_unknown_alias_has_null_session_but_ok(agent):
    assert get_session_status(actor=agent, alias="nobody") == {
        "ok": True,
        "session": None,
        "inbox_pending": 0,
        "recent_completions": [],
    }


def test_unknown_alias_still_counts_its_waiting_inbox(agent):
    send_task(actor=agent, alias="newcomer", task="say hello")
    result = get_session_status(actor=agent, alias="newcomer")
    assert (result["session"], result["inbox_pending"]) == (None, 1)


def test_session_status_shows_the_session_row(agent, online, network):
    online("coder", status="blocked", task="waiting on review", model="your-model-id")
    row = get_session_status(actor=agent, alias="coder")["session"]
    assert SESSION_KEYS <= set(row)
    assert (row["alias"], row["status"], row["task"], row["model"], row["network_id"]) == (
        "coder",
        "blocked",
        "waiting on review",
        "your-model-id",
        network.id,
    )


def test_inbox_pending_counts_unacked_messages_of_the_alias(agent, online):
    online("coder")
    first = send_task(actor=agent, alias="coder", task="one")
    send_task(actor=agent, alias="coder", task="two")
    send_message(actor=agent, alias="coder", message="three")
    send_message(actor=agent, alias="tester", message="not coder's")
    ack_inbox(actor=agent, alias="coder", message_id=first["message_id"])
    assert get_session_status(actor=agent, alias="coder")["inbox_pending"] == 2


def test_recent_completions_are_the_five_newest_with_nine_columns(agent, online, network):
    online("coder")
    with freeze_time(START) as frozen:
        for n in range(7):
            report_completion(
                actor=agent, alias="coder", task=f"job {n}", result=f"done {n}", artifacts=["/tmp/sort.py"], score=8
            )
            frozen.tick(60)
    report_completion(actor=agent, alias="tester", task="not coder's", result="done")
    recent = get_session_status(actor=agent, alias="coder")["recent_completions"]
    assert [row["task"] for row in recent] == ["job 6", "job 5", "job 4", "job 3", "job 2"]
    assert all(list(row) == COMPLETION_KEYS for row in recent)
    assert recent[0]["artifacts"] == '["/tmp/sort.py"]'
    assert (recent[0]["session_name"], recent[0]["score"], recent[0]["network_id"]) == ("coder", 8, network.id)


# --- list_tasks -----------------------------------------------------------------------------------


@pytest.fixture
def tasks(agent):
    """Four tasks a minute apart: a (coder, from lead, replied), b (coder, delivered), c (tester), d (coder)."""
    sent = {}
    with freeze_time(START) as frozen:
        for name, alias, sender in [("a", "coder", "lead"), ("b", "coder", "hub"), ("c", "tester", "lead")]:
            sent[name] = send_task(actor=agent, alias=alias, task=f"task {name}", from_session=sender)["task_id"]
            frozen.tick(60)
        send_reply(actor=agent, alias="lead", text="answer a", in_reply_to=sent["a"])
        sent["d"] = send_task(actor=agent, alias="coder", task="task d", priority="high")["task_id"]
        yield sent


def test_task_rows_have_exactly_the_nine_list_columns(agent, tasks):
    rows = list_tasks(actor=agent)["tasks"]
    assert rows and all(list(row) == TASK_LIST_KEYS for row in rows)


def test_task_rows_carry_their_values(agent, tasks):
    row = next(row for row in list_tasks(actor=agent)["tasks"] if row["task_id"] == tasks["a"])
    assert row | {"created_at": None, "completed_at": None} == {
        "task_id": tasks["a"],
        "from_name": "lead",
        "to_name": "coder",
        "priority": "normal",
        "status": "replied",
        "content": "task a",
        "result": "answer a",
        "created_at": None,
        "completed_at": None,
    }
    assert row["created_at"] == "2026-04-12T10:00:00.000Z"
    assert row["completed_at"] == "2026-04-12T10:03:00.000Z"


def test_tasks_are_listed_newest_first(agent, tasks):
    assert [row["task_id"] for row in list_tasks(actor=agent)["tasks"]] == [
        tasks["d"],
        tasks["c"],
        tasks["b"],
        tasks["a"],
    ]


@pytest.mark.parametrize(
    ("filters", "names"),
    [
        ({"alias": "coder"}, ["d", "b", "a"]),
        ({"alias": "tester"}, ["c"]),
        ({"status": "replied"}, ["a"]),
        ({"status": "delivered", "alias": "coder"}, ["d", "b"]),
        ({"from_name": "lead"}, ["c", "a"]),
        ({"from_name": "nobody"}, []),
    ],
)
def test_task_filters(agent, tasks, filters, names):
    result = list_tasks(actor=agent, **filters)
    assert [row["task_id"] for row in result["tasks"]] == [tasks[name] for name in names]
    assert result["count"] == len(names)


@pytest.mark.parametrize("filters", [{}, {"alias": "tester"}, {"status": "replied"}, {"limit": 1}])
def test_stats_count_the_whole_scope_whatever_the_filters(agent, tasks, filters):
    stats = list_tasks(actor=agent, **filters)["stats"]
    assert {row["status"]: row["count"] for row in stats} == {"delivered": 3, "replied": 1}
    assert all(set(row) == {"status", "count"} for row in stats)


def test_limit_defaults_to_20_and_allows_100(agent):
    with freeze_time(START) as frozen:
        for n in range(21):
            send_task(actor=agent, alias="coder", task=f"task {n}")
            frozen.tick(1)
        default = list_tasks(actor=agent)
        assert (len(default["tasks"]), default["count"]) == (20, 20)
        assert default["tasks"][0]["content"] == "task 20"
        assert list_tasks(actor=agent, limit=100)["count"] == 21
        assert list_tasks(actor=agent, limit=3)["count"] == 3


@pytest.mark.parametrize("limit", [0, 101, -1, "ten", 2.5, True])
def test_bad_task_limit_is_refused(agent, limit):
    error = refused(list_tasks, actor=agent, limit=limit)
    assert error.extra["field"] == "limit"


def test_bad_task_status_filter_is_refused(agent):
    assert refused(list_tasks, actor=agent, status="done").extra["field"] == "status"


# --- get_task -------------------------------------------------------------------------------------


def test_get_task_returns_the_whole_row_and_its_events(agent, network):
    with freeze_time(START):
        parent = send_task(actor=agent, alias="lead", task="ship v2")["task_id"]
        child = send_task(actor=agent, alias="coder", task="write quicksort", parent_task_id=parent, ttl_seconds=7200)
        result = get_task(actor=agent, task_id=child["task_id"])
    task = result["task"]
    assert result["ok"] is True
    assert set(TASK_LIST_KEYS) <= set(task)
    assert {"requires_response", "parent_task_id", "expires_at", "network_id", "delivered_at", "started_at"} <= set(
        task
    )
    assert (task["parent_task_id"], task["network_id"], task["requires_response"]) == (parent, network.id, True)
    assert (task["status"], task["content"], task["to_name"]) == ("delivered", "write quicksort", "coder")
    assert task["expires_at"] == "2026-04-12T12:00:00.000Z"
    assert [(e["from_status"], e["to_status"]) for e in result["events"]] == [(None, "delivered")]


def test_get_task_of_unknown_id_is_task_not_found(agent):
    error = refused(get_task, actor=agent, task_id="00000000-0000-0000-0000-000000000000")
    assert (error.code, error.error) == ("task_not_found", "task not found")


# --- get_completions ------------------------------------------------------------------------------


@pytest.fixture
def history(agent):
    """Completions 30h, 2h and 1h before 2026-04-12T12:00Z (the frozen now)."""
    with freeze_time("2026-04-11T06:00:00Z") as frozen:
        report_completion(actor=agent, alias="coder", task="old", result="done")
        frozen.move_to("2026-04-12T10:00:00Z")
        report_completion(actor=agent, alias="tester", task="earlier", result="done", score=6)
        frozen.move_to("2026-04-12T11:00:00Z")
        report_completion(
            actor=agent, alias="coder", task="write quicksort", result="quicksort", artifacts=["/tmp/sort.py"]
        )
        frozen.move_to("2026-04-12T12:00:00Z")
        yield frozen


def tasks_of(result: dict) -> list[str]:
    return [row["task"] for row in result["completions"]]


def test_completions_default_to_the_last_24_hours_newest_first(agent, history):
    assert tasks_of(get_completions(actor=agent)) == ["write quicksort", "earlier"]


def test_completion_rows_have_nine_columns_and_artifacts_as_json_string(agent, history, network):
    row = get_completions(actor=agent)["completions"][0]
    assert list(row) == COMPLETION_KEYS
    assert row["artifacts"] == '["/tmp/sort.py"]'
    assert json.loads(row["artifacts"]) == ["/tmp/sort.py"]
    assert (row["session_name"], row["result"], row["network_id"]) == ("coder", "quicksort", network.id)
    assert row["completed_at"] == "2026-04-12T11:00:00.000Z"


@pytest.mark.parametrize(
    ("since", "expected"),
    [
        ("2026-04-11T00:00:00Z", ["write quicksort", "earlier", "old"]),
        ("2026-04-12T10:30:00Z", ["write quicksort"]),
        ("2026-04-12T18:30:00+08:00", ["write quicksort"]),
        pytest.param("2026-04-12T10:00:00", ["write quicksort", "earlier"], id="naive-is-utc"),
        pytest.param("2026-04-12", ["write quicksort", "earlier"], id="date-only"),
        ("2026-04-12T11:00:00.001Z", []),
    ],
)
def test_since_is_honoured(agent, history, since, expected):
    assert tasks_of(get_completions(actor=agent, since=since)) == expected


@pytest.mark.parametrize("since", ["yesterday", "2026-13-45T00:00:00Z", "12/04/2026", 1712916000])
def test_garbage_since_is_refused_naming_since(agent, since):
    error = refused(get_completions, actor=agent, since=since)
    assert (error.code, error.extra["field"]) == ("invalid_argument", "since")
    assert "since" in error.error


def test_completions_filter_by_alias(agent, history):
    assert tasks_of(get_completions(actor=agent, alias="tester")) == ["earlier"]


def test_completion_limit_defaults_to_50_and_allows_500(agent):
    with freeze_time(START) as frozen:
        for n in range(51):
            report_completion(actor=agent, alias="coder", task=f"job {n}", result="done")
            frozen.tick(1)
        assert len(get_completions(actor=agent)["completions"]) == 50
        assert get_completions(actor=agent)["completions"][0]["task"] == "job 50"
        assert len(get_completions(actor=agent, limit=500)["completions"]) == 51
        assert len(get_completions(actor=agent, limit=2)["completions"]) == 2


@pytest.mark.parametrize("limit", [0, 501, "many"])
def test_bad_completion_limit_is_refused(agent, limit):
    assert refused(get_completions, actor=agent, limit=limit).extra["field"] == "limit"
