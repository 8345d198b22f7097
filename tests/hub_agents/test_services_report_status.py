"""report_status: the agent's heartbeat and its side effects."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from freezegun import freeze_time

from hub_agents.models import AgentSession, Node
from hub_core.errors import HubError
from hub_core.events import EVENT_SCHEMA, EventType
from hub_tasks.models import Task
from tests.helpers import refused
from tests.helpers.calls import ack_inbox, get_task, report_status, send_message, send_task


def session(alias: str) -> AgentSession:
    return AgentSession.objects.get(alias=alias)


# --- result and upsert ---------------------------------------------------------------------------


def test_returns_ok_resume_id_alias_and_inbox_count(agent):
    result = report_status(actor=agent, resume_id="sdk-n_a1b2c3d4", alias="代码1号", status="working")
    assert result == {"ok": True, "resume_id": "sdk-n_a1b2c3d4", "alias": "代码1号", "inbox_count": 0}


def test_second_report_with_same_resume_id_updates_the_row(agent, online):
    online("coder", status="idle")
    online("coder", status="working", task="write quicksort")
    assert AgentSession.objects.count() == 1
    assert (session("coder").status, session("coder").task) == ("working", "write quicksort")


def test_second_report_moves_last_seen_at(agent, online):
    with freeze_time("2026-04-12T10:00:00Z") as frozen:
        online("coder")
        frozen.tick(120)
        online("coder")
    assert session("coder").last_seen_at == datetime(2026, 4, 12, 10, 2, tzinfo=UTC)


def test_same_alias_with_new_resume_id_replaces_the_old_row(online):
    online("coder", resume_id="old-run")
    online("coder", resume_id="new-run")
    assert list(AgentSession.objects.values_list("resume_id", flat=True)) == ["new-run"]


def test_same_alias_in_another_network_survives_a_restart(make_actor, other_network, online):
    online("coder", resume_id="beta-run", actor=make_actor(other_network, "member"))
    online("coder", resume_id="old-run")
    online("coder", resume_id="new-run")
    assert sorted(AgentSession.objects.values_list("resume_id", flat=True)) == ["beta-run", "new-run"]


def test_other_aliases_survive_a_restart(online):
    online("coder", resume_id="run-1")
    online("tester", resume_id="run-2")
    online("coder", resume_id="run-3")
    assert sorted(AgentSession.objects.values_list("alias", "resume_id")) == [("coder", "run-3"), ("tester", "run-2")]


# --- argument checks ------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["working", "idle", "blocked", "error", "waiting_input", "offline"])
def test_every_contract_status_is_accepted(online, status):
    online("coder", status=status)
    assert session("coder").status == status


@pytest.mark.parametrize("status", ["busy", "WORKING", "", None, 3])
def test_bad_or_missing_status_is_refused_naming_status(agent, status):
    error = refused(report_status, actor=agent, resume_id="r1", alias="coder", status=status)
    assert error.code == "invalid_argument"
    assert error.extra["field"] == "status"
    assert error.error.startswith("status:")
    assert not AgentSession.objects.exists()


@pytest.mark.parametrize("field", ["resume_id", "alias"])
def test_required_identifiers_are_refused_when_missing_or_too_long(agent, field):
    fields = {"resume_id": "r1", "alias": "coder"}
    for bad in (None, "", "x" * 201):
        error = refused(report_status, actor=agent, status="idle", **{**fields, field: bad})
        assert error.extra["field"] == field
    assert not AgentSession.objects.exists()


def test_output_over_50000_is_refused(agent, online):
    error = refused(online, alias="coder", output="x" * 50_001)
    assert error.extra["field"] == "output"
    assert not AgentSession.objects.exists()


def test_output_up_to_50000_is_stored_truncated_to_4000(online):
    online("coder", output="a" * 4_000 + "b" * 46_000)
    assert session("coder").output == "a" * 4_000


def test_short_output_is_stored_whole(online):
    online("coder", output="compiled ok")
    assert session("coder").output == "compiled ok"


def test_task_over_10000_is_refused_and_10000_accepted(online):
    error = refused(online, alias="coder", task="t" * 10_001)
    assert error.extra["field"] == "task"
    online("coder", task="t" * 10_000)
    assert session("coder").task == "t" * 10_000


@pytest.mark.parametrize(("field", "low", "high"), [("score", 0, 10), ("progress", 0, 100)])
def test_number_bounds_are_inclusive(online, field, low, high):
    online("coder", **{field: low})
    assert getattr(session("coder"), field) == low
    online("coder", **{field: high})
    assert getattr(session("coder"), field) == high


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("score", -0.1),
        ("score", 10.5),
        ("score", True),
        ("score", "8"),
        ("score", float("nan")),
        ("progress", -1),
        ("progress", 101),
        ("progress", False),
        ("progress", "50"),
    ],
)
def test_out_of_range_or_non_numeric_numbers_are_refused(online, field, value):
    error = refused(online, alias="coder", **{field: value})
    assert error.extra["field"] == field
    assert not AgentSession.objects.exists()


def test_channels_json_array_string_is_stored_as_sent(online):
    online("coder", channels='["general", "ops"]')
    assert session("coder").channels == '["general", "ops"]'


@pytest.mark.parametrize("channels", ["general", '{"a": 1}', "[1, 2]", '"general"', ["general"]])
def test_channels_that_are_not_a_json_array_string_are_refused(online, channels):
    error = refused(online, alias="coder", channels=channels)
    assert error.extra["field"] == "channels"
    assert not AgentSession.objects.exists()


# --- what a later report keeps and replaces -------------------------------------------------------

IDENTITY = {
    "server": "srv-1",
    "hostname": "box.local",
    "agent": "agent-node:codex-sdk",
    "project_dir": "/home/dev/app",
    "version": "0.8.1",
    "tmux_name": "coder-tmux",
    "node_id": "n_a1b2c3d4",
    "session_id": "thread-42",
    "config_path": "/home/dev/.agent.json",
    "channels": '["general"]',
    "model": "your-model-id",
}


def test_identity_fields_are_kept_when_a_later_report_omits_them(online):
    online("coder", status="working", **IDENTITY)
    online("coder", status="idle")
    row = session("coder")
    assert {field: getattr(row, field) for field in IDENTITY} == IDENTITY


def test_identity_fields_are_replaced_when_a_later_report_sends_them(online):
    online("coder", **IDENTITY)
    online("coder", model="other-model", server="srv-2")
    assert (session("coder").model, session("coder").server, session("coder").hostname) == (
        "other-model",
        "srv-2",
        "box.local",
    )


def test_model_is_stored_on_the_session_without_node_id(online):
    online("coder", model="your-model-id")
    assert session("coder").model == "your-model-id"


def test_activity_fields_are_replaced_when_a_later_report_omits_them(online):
    online("coder", status="working", task="write quicksort", progress=50, score=7, output="halfway")
    online("coder", status="idle")
    row = session("coder")
    assert (row.task, row.progress, row.score, row.output) == (None, None, None, None)


# --- nodes ----------------------------------------------------------------------------------------


def test_node_id_upserts_a_node_with_model_name_and_runtime(online, network):
    online("coder", node_id="n_1", model="your-model-id", node_name="build box", agent="agent-node:codex-sdk")
    node = Node.objects.get()
    assert (node.network_id, node.node_id, node.model, node.node_name, node.runtime) == (
        network.id,
        "n_1",
        "your-model-id",
        "build box",
        "codex-sdk",
    )


def test_bare_agent_name_is_its_own_runtime(online):
    online("coder", node_id="n_1", agent="claude-code")
    assert Node.objects.get().runtime == "claude-code"


def test_second_report_updates_the_same_node_keeping_omitted_values(online):
    online("coder", node_id="n_1", model="m1", node_name="build box", agent="agent-node:codex-sdk")
    online("tester", node_id="n_1", model="m2")
    node = Node.objects.get()
    assert (node.model, node.node_name, node.runtime) == ("m2", "build box", "codex-sdk")


def test_without_node_id_no_node_is_written_and_node_name_is_not_stored(online):
    online("coder", node_name="build box", model="your-model-id")
    assert not Node.objects.exists()
    row = AgentSession.objects.values().get()
    assert "build box" not in [value for value in row.values() if isinstance(value, str)]


# --- tasks started by a working report ------------------------------------------------------------


def test_working_with_task_id_starts_the_delivered_task(agent, online):
    with freeze_time("2026-04-12T10:00:00Z") as frozen:
        online("coder")
        sent = send_task(actor=agent, alias="coder", task="write quicksort")
        frozen.tick(90)
        online("coder", status="working", task=sent["task_id"])
    task = Task.objects.get(pk=sent["task_id"])
    assert task.status == "running"
    assert task.started_at == datetime(2026, 4, 12, 10, 1, 30, tzinfo=UTC)


def test_working_with_task_id_starts_an_acked_task_and_logs_the_event(agent, online):
    online("coder")
    sent = send_task(actor=agent, alias="coder", task="write quicksort")
    ack_inbox(actor=agent, alias="coder", message_id=sent["message_id"])
    online("coder", status="working", task=sent["task_id"])
    events = get_task(actor=agent, task_id=sent["task_id"])["events"]
    assert [(e["from_status"], e["to_status"]) for e in events][-1] == ("acked", "running")


def test_working_with_task_content_starts_the_latest_task_with_that_content(agent, online):
    with freeze_time("2026-04-12T10:00:00Z") as frozen:
        online("coder")
        older = send_task(actor=agent, alias="coder", task="write quicksort", ttl_seconds=86_400)
        frozen.tick(60)
        newer = send_task(actor=agent, alias="coder", task="write quicksort", ttl_seconds=86_400)
        frozen.tick(60)
        online("coder", status="working", task="write quicksort")
    assert Task.objects.get(pk=newer["task_id"]).status == "running"
    assert Task.objects.get(pk=older["task_id"]).status == "delivered"


def test_working_does_not_start_a_task_of_another_alias(agent, online):
    online("coder")
    theirs = send_task(actor=agent, alias="tester", task="write quicksort")
    online("coder", status="working", task=theirs["task_id"])
    online("coder", status="working", task="write quicksort")
    task = Task.objects.get(pk=theirs["task_id"])
    assert (task.status, task.started_at) == ("delivered", None)


def test_working_does_not_start_a_task_in_another_network(online, make_actor, other_network):
    beta_task = send_task(actor=make_actor(other_network, "member"), alias="coder", task="write quicksort")
    online("coder", status="working", task=beta_task["task_id"])
    online("coder", status="working", task="write quicksort")
    assert Task.objects.get(pk=beta_task["task_id"]).status == "delivered"


@pytest.mark.parametrize("status", ["idle", "blocked", "waiting_input"])
def test_only_working_starts_a_task(agent, online, status):
    sent = send_task(actor=agent, alias="coder", task="write quicksort")
    online("coder", status=status, task=sent["task_id"])
    assert Task.objects.get(pk=sent["task_id"]).status == "delivered"


# --- who may report -------------------------------------------------------------------------------


def test_user_token_is_refused_with_network_token_required(make_actor, network):
    actor = make_actor(user="alice", memberships={network: "member"})
    error = refused(report_status, actor=actor, resume_id="r1", alias="coder", status="idle")
    assert (error.code, error.error) == ("network_token_required", "network_token_required")
    assert error.as_result()["ok"] is False
    assert not AgentSession.objects.exists()


def test_viewer_network_token_is_refused_with_permission_denied(viewer):
    error = refused(report_status, actor=viewer, resume_id="r1", alias="coder", status="idle", node_id="n_1")
    assert error.error == "permission_denied"
    assert not AgentSession.objects.exists()
    assert not Node.objects.exists()


def test_network_token_cannot_report_into_another_network(agent, other_network):
    error = refused(
        report_status, actor=agent, resume_id="r1", alias="coder", status="idle", network_id=other_network.id
    )
    assert error.error == "permission_denied"
    assert not AgentSession.objects.exists()


def test_network_token_may_name_its_own_network(agent, network):
    report_status(actor=agent, resume_id="r1", alias="coder", status="idle", network_id=network.id)
    assert session("coder").network_id == network.id


# --- event and inbox count ------------------------------------------------------------------------


def test_session_updated_event_is_published_on_commit(online, network, published, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        online("coder", status="working", task="write quicksort", progress=50)
    [event] = [e for e in published if e.type == EventType.SESSION_UPDATED]
    assert set(event.payload) == EVENT_SCHEMA[EventType.SESSION_UPDATED]
    assert event.network_id == network.id
    assert event.payload == {
        "alias": "coder",
        "resume_id": "resume-coder",
        "status": "working",
        "task": "write quicksort",
        "progress": 50,
    }


def test_refused_report_publishes_nothing(online, published, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(HubError):
        online("coder", status="busy")
    assert published == []


def test_inbox_count_counts_pending_messages_only(agent, online, make_actor, other_network):
    first = send_task(actor=agent, alias="coder", task="write quicksort")
    send_message(actor=agent, alias="coder", message="standup at 10")
    send_message(actor=agent, alias="coder", message="and lunch")
    send_message(actor=agent, alias="tester", message="not for coder")
    send_message(actor=make_actor(other_network, "member"), alias="coder", message="other network")
    ack_inbox(actor=agent, alias="coder", message_id=first["message_id"])
    assert online("coder")["inbox_count"] == 2
