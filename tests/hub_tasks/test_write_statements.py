"""The agents' write tools ask the database only what they need (issue 29): send_task's checks of
caps and budgets and the receiver's status are one statement. What each answers stays what a
separate read would answer."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from hub_agents.models import AgentSession
from tests.helpers.calls import get_task, send_task

pytestmark = pytest.mark.django_db

# Statements each call sends through the tool path, its transaction's BEGIN and COMMIT aside (so
# the same on both databases but for the event seal: one statement on PostgreSQL, three on SQLite).
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
    return answer, len(ran) - SEAL.get(connection.vendor, 3)


def test_send_task_answers_the_receivers_status_from_its_one_read_ahead(agent, online):
    online("coder", status="working")

    answer, statements = _statements(send_task, actor=agent, alias="coder", task="write it")

    assert answer["session_status"] == "working" and "warning" not in answer
    # The read ahead (caps, budgets, status), the task, its search entry, attempt, history row,
    # inbox row and event rows.
    assert statements == 7


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
