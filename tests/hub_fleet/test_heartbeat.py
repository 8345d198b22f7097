"""report_status's repeats: a heartbeat that says what the agent said before moves last_seen_at in
one statement and publishes nothing; anything a reader would see change still takes the locked path,
with its event, its orphan removal, its task start and its node."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from freezegun import freeze_time

from hub_agents.models import AgentSession, Node
from hub_core.events import EventType
from hub_tasks.models import Task
from tests.helpers.calls import get_all_status, report_status, send_message, send_task

NOW = datetime(2026, 4, 12, 10, 0, tzinfo=UTC)
IDENTITY = {"agent": "claude-code", "hostname": "box.local", "project_dir": "/home/dev/app", "version": "0.8.1"}


@pytest.fixture
def clock():
    # A clock that stands still: the process's copy of the network's deadline stays fresh, so
    # settling what fell due asks the database nothing (hub_tasks.deadlines).
    with freeze_time(NOW) as frozen:
        yield frozen


def updates(published) -> list[dict]:
    return [event.payload for event in published if event.type == EventType.SESSION_UPDATED]


def statements(call, *args, **kwargs) -> tuple[dict, list[str]]:
    """The call's answer and its statements, but for the read of the network's deadline that the
    process makes once per hub_tasks.deadlines.LEASE for every call (its copy went stale as the clock
    moved) and SQLite's connection check."""
    with CaptureQueriesContext(connection) as captured:
        answer = call(*args, **kwargs)
    sql = [query["sql"] for query in captured.captured_queries]
    return answer, [one for one in sql if "hub_tasks_taskdeadline" not in one and not one.startswith("PRAGMA")]


def test_a_repeat_is_one_statement_and_publishes_nothing(online, clock, published, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        online("coder", status="working", **IDENTITY)
        clock.tick(60)
        answer, sql = statements(online, "coder", status="working", **IDENTITY)
    assert answer == {"ok": True, "resume_id": "resume-coder", "alias": "coder", "inbox_count": 0}
    assert len(sql) == 1 and sql[0].startswith("UPDATE hub_agents_agentsession"), sql
    assert len(updates(published)) == 1  # the first report's
    assert AgentSession.objects.get().last_seen_at == NOW + timedelta(seconds=60)


def test_a_repeat_more_than_a_minute_after_the_last_report_publishes_the_session_seen_again(
    online, clock, published, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        online("coder", status="working", **IDENTITY)
        for seconds in (30, 30, 61, 3 * 60):  # the contract's heartbeat: every 3 minutes
            clock.tick(seconds)
            online("coder", status="working", **IDENTITY)

    assert len(updates(published)) == 3  # the first report, then the ones 61 s and 3 min after the last


def test_a_repeat_that_leaves_identity_out_keeps_it(online, clock, published, django_capture_on_commit_callbacks):
    online("coder", **IDENTITY)
    with django_capture_on_commit_callbacks(execute=True):
        online("coder")
    assert updates(published) == []
    row = AgentSession.objects.get()
    assert {field: getattr(row, field) for field in IDENTITY} == IDENTITY


@pytest.mark.parametrize(
    "change",
    [
        {"status": "working"},
        {"task": "write quicksort"},
        {"progress": 10},
        {"output": "compiled"},
        {"score": 7},
        {"hostname": "other.local"},
        {"model": "your-model-id"},
        {"max_concurrent": 2},
        {"skills": ["python"]},
        {"alias": "tester"},
    ],
)
def test_a_report_that_says_something_new_publishes_it(
    online, clock, published, django_capture_on_commit_callbacks, change
):
    online("coder", **IDENTITY)
    fields = {"status": "idle", **IDENTITY, **change}
    alias = fields.pop("alias", "coder")
    with django_capture_on_commit_callbacks(execute=True):
        online(alias, resume_id="resume-coder", **fields)
    [payload] = updates(published)
    assert (payload["alias"], payload["status"]) == (alias, fields["status"])
    row = AgentSession.objects.get()
    assert {field: getattr(row, field) for field in change if field != "alias"} == {
        field: value for field, value in change.items() if field != "alias"
    }


def test_a_repeat_clears_nothing_it_says_again(online, clock):
    activity = {"task": "write quicksort", "progress": 40.0, "score": 6.5, "output": "halfway"}
    online("coder", status="blocked", **activity)
    online("coder", status="blocked", **activity)
    row = AgentSession.objects.get()
    assert {field: getattr(row, field) for field in activity} == activity


def test_the_same_report_from_a_session_read_offline_brings_it_back(
    online, agent, clock, published, django_capture_on_commit_callbacks
):
    online("coder")
    clock.tick(settings.COMMHUB_OFFLINE_AFTER_SECONDS + 1)
    assert get_all_status(actor=agent)["sessions"][0]["status"] == "offline"
    with django_capture_on_commit_callbacks(execute=True):
        online("coder")
    assert [payload["status"] for payload in updates(published)] == ["idle"]
    assert get_all_status(actor=agent)["sessions"][0]["status"] == "idle"


def test_a_repeat_answers_the_inbox_count_as_it_is_now(online, agent, clock):
    online("coder")
    send_message(actor=agent, alias="coder", message="standup at 10")
    send_task(actor=agent, alias="coder", task="write quicksort")
    _, sql = statements(online, "coder")
    assert len(sql) == 1
    assert online("coder")["inbox_count"] == 2


def test_a_repeat_of_working_on_a_task_sent_since_starts_it(online, agent, clock):
    online("coder", status="working", task="write quicksort")
    sent = send_task(actor=agent, alias="coder", task="write quicksort")
    online("coder", status="working", task="write quicksort")
    assert Task.objects.get(pk=sent["task_id"]).status == "running"
    by_id = send_task(actor=agent, alias="coder", task="and test it")
    online("coder", status="working", task=by_id["task_id"])
    online("coder", status="working", task=by_id["task_id"])  # started by the change; a repeat after
    assert Task.objects.get(pk=by_id["task_id"]).status == "running"


def test_a_repeat_with_an_orphan_under_its_alias_removes_it(online, network, clock):
    online("coder", resume_id="new-run")
    # An orphan a concurrent first report of the old run left (the locked path removes them first).
    AgentSession.objects.create(network=network, resume_id="old-run", alias="coder", status="idle")
    online("coder", resume_id="new-run")
    assert list(AgentSession.objects.values_list("resume_id", flat=True)) == ["new-run"]


def test_a_repeat_with_a_node_id_keeps_the_node_seen(online, clock):
    online("coder", node_id="n_1", model="m1")
    clock.tick(60)
    online("coder", node_id="n_1", model="m1")
    node = Node.objects.get()
    assert (node.model, node.last_seen_at) == ("m1", NOW + timedelta(seconds=60))


def test_a_repeat_through_another_token_records_it(online, make_actor, network, clock):
    online("coder")
    other = make_actor(network, "member")
    online("coder", actor=other)
    assert AgentSession.objects.get().token_id == other.token_id


def test_a_repeat_of_another_network_touches_only_its_own(online, make_actor, other_network, clock):
    online("coder", resume_id="run")
    beta = make_actor(other_network, "member")
    report_status(actor=beta, resume_id="run", alias="coder", status="idle")
    clock.tick(60)
    online("coder", resume_id="run")
    seen = dict(AgentSession.objects.values_list("network_id", "last_seen_at"))
    assert seen[other_network.id] == NOW
    assert sorted(seen.values()) == [NOW, NOW + timedelta(seconds=60)]
