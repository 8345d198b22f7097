"""The agents' write tools ask the database only what they need (issue 29): send_task's checks of
caps and budgets and the receiver's status are one statement, send_reply reads the receiver's
status with the task it locks, ack_inbox learns from its compare-and-swap whether it was the
delivery receipt. What each answers stays what a separate read would answer."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from hub_agents.models import AgentSession
from hub_core.errors import HubError
from tests.helpers.calls import ack_inbox, get_task, report_completion, send_message, send_reply, send_task

pytestmark = pytest.mark.django_db

# Statements each call sends through the tool path, its transaction's BEGIN and COMMIT aside (so
# the same on both databases but for the event seal, which also writes the event rows: one
# statement on PostgreSQL, four on SQLite).
SEAL = {"postgresql": 1}
# Reads of per-process caches that lapse on a clock (the approval rules, a network's default lease):
# not the write's own, and made or not depending on how long ago the process last made them.
CACHED = ('"hub_tools_approvalrule"', '"default_lease_seconds"')


def _statements(call, **arguments) -> tuple[dict, int]:
    with CaptureQueriesContext(connection) as captured:
        answer = call(**arguments)
    ran = [q["sql"] for q in captured.captured_queries]
    ran = [sql for sql in ran if not sql.startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN", "PRAGMA"))]
    ran = [sql for sql in ran if not any(table in sql for table in CACHED)]
    return answer, len(ran) - SEAL.get(connection.vendor, 4)


def test_send_task_answers_the_receivers_status_from_its_one_read_ahead(agent, online):
    online("coder", status="working")

    answer, statements = _statements(send_task, actor=agent, alias="coder", task="write it")

    assert answer["session_status"] == "working" and "warning" not in answer
    # The read ahead (caps, budgets, status), the task, its search entry, attempt, history row and
    # inbox row.
    assert statements == 6


def test_send_task_to_a_stale_agent_answers_offline_and_to_nobody_warns(agent, online):
    online("coder", status="working")
    AgentSession.objects.filter(alias="coder").update(
        last_seen_at=AgentSession.objects.get().last_seen_at - timedelta(days=1)
    )

    assert send_task(actor=agent, alias="coder", task="write it")["session_status"] == "offline"
    unknown = send_task(actor=agent, alias="nobody", task="write it")
    assert unknown["session_status"] is None and "No agent named 'nobody'" in unknown["warning"]


def test_send_task_of_a_held_task_answers_the_status_too(agent, online):
    online("coder", status="idle")
    first = send_task(actor=agent, alias="coder", task="first")["task_id"]

    held = send_task(actor=agent, alias="coder", task="after it", depends_on=[first])

    assert held["session_status"] == "idle"
    assert get_task(actor=agent, task_id=held["task_id"])["task"]["status"] == "created"


def test_send_reply_reads_the_receivers_status_with_the_task_it_locks(agent, online):
    online("lead", status="working")
    online("coder", status="blocked")
    task_id = send_task(actor=agent, alias="coder", task="write it", from_session="lead")["task_id"]

    answer, statements = _statements(
        send_reply, actor=agent, alias="lead", text="done", in_reply_to=task_id, from_session="coder"
    )

    assert answer["session_status"] == "working" and "warning" not in answer
    assert get_task(actor=agent, task_id=task_id)["task"]["status"] == "replied"
    # No read of the receiver's status of its own: the task's lock, the ending (inbox rows, task,
    # its search entry, attempt, history, cap slots, dependents), the reply's inbox row and its
    # search entry.
    assert statements == 10


def test_send_reply_to_someone_who_never_reported_warns(agent, online):
    online("coder", status="blocked")
    task_id = send_task(actor=agent, alias="coder", task="write it", from_session="lead")["task_id"]

    answer = send_reply(actor=agent, alias="lead", text="done", in_reply_to=task_id, from_session="coder")

    assert answer["session_status"] is None and "No agent named 'lead'" in answer["warning"]


def test_ack_inbox_acks_once_and_stamps_the_first_read_with_the_move(agent, online):
    online("coder", status="idle")
    task_id = send_task(actor=agent, alias="coder", task="write it")["task_id"]

    answer, statements = _statements(ack_inbox, actor=agent, alias="coder", message_id=task_id)

    assert answer == {"ok": True}
    task = get_task(actor=agent, task_id=task_id)["task"]
    assert task["status"] == "acked"
    # The message, the task's lock, the compare-and-swap (which says it was the receipt), the task's
    # one UPDATE (status and first read), its attempt and history, the leases' check.
    assert statements == 7
    with pytest.raises(HubError) as again:
        ack_inbox(actor=agent, alias="coder", message_id=task_id)
    assert again.value.code == "message_already_acked"


def test_report_completion_without_usage_asks_for_no_attempt(agent, online):
    online("coder", status="working")
    task_id = send_task(actor=agent, alias="coder", task="write it")["task_id"]

    with CaptureQueriesContext(connection) as captured:
        answer = report_completion(actor=agent, alias="coder", task=task_id, result="done")

    assert answer["task_id"] == task_id and "warning" not in answer
    assert not [q for q in captured.captured_queries if q["sql"].startswith('SELECT "hub_tasks_taskattempt"')]
    assert get_task(actor=agent, task_id=task_id)["task"]["status"] == "replied"


def test_ack_inbox_of_a_plain_message_is_its_read_and_one_write(agent, online):
    online("coder", status="idle")
    message_id = send_message(actor=agent, alias="coder", message="hello")["message_id"]

    with CaptureQueriesContext(connection) as captured:
        answer = ack_inbox(actor=agent, alias="coder", message_id=message_id)

    assert answer == {"ok": True}
    # The call's own statements (not the reads of per-process caches that lapse on a clock): the
    # message, then hub_tasks.acks' one write, which renews the alias's leases on PostgreSQL; on
    # SQLite the renewal's read follows. Nothing is published: no seal.
    ran = [q["sql"] for q in captured.captured_queries if "hub_tasks_" in q["sql"]]
    assert len(ran) == (2 if connection.vendor == "postgresql" else 3), ran
    with pytest.raises(HubError) as again:
        ack_inbox(actor=agent, alias="coder", message_id=message_id)
    assert again.value.code == "message_already_acked"
