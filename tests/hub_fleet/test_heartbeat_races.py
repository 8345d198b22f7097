"""A repeated heartbeat racing a change of its session on real connections: the one-statement
repeat (hub_fleet.services._heartbeat_repeated) checks what it compares on the row it writes, after
waiting for the row's lock, so a report that was a repeat when it began and is not one when it
writes goes the locked way and publishes what it changed."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from hub_agents.models import AgentSession
from hub_events.models import Event
from tests.helpers.calls import report_status
from tests.helpers.races import RACE_TIMEOUT

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.race]


def lock_waiters() -> int:
    """Backends of this database waiting for a lock (read afresh: inside a transaction PostgreSQL
    answers pg_stat_activity from the snapshot it took first)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


def test_a_repeat_behind_a_concurrent_change_writes_and_publishes_the_change(agent):
    if connection.vendor != "postgresql":
        pytest.skip("on SQLite writers are serialised: a repeat never waits behind a change")
    report_status(actor=agent, resume_id="r1", alias="coder", status="idle")
    published = Event.objects.filter(type="session_updated", audience="").count()
    answers: list[dict] = []

    def repeat() -> None:
        try:
            answers.append(report_status(actor=agent, resume_id="r1", alias="coder", status="idle"))
        finally:
            connection.close()

    with transaction.atomic():
        # Another writer's change, holding the row: the repeat's UPDATE waits for it.
        AgentSession.objects.select_for_update().filter(resume_id="r1").update(status="blocked")
        racer = threading.Thread(target=repeat)
        racer.start()
        deadline = time.monotonic() + RACE_TIMEOUT
        while lock_waiters() == 0:
            assert time.monotonic() < deadline, "the repeat never waited for the row"
            time.sleep(0.01)
    racer.join(timeout=RACE_TIMEOUT)

    assert answers == [{"ok": True, "resume_id": "r1", "alias": "coder", "inbox_count": 0}]
    assert AgentSession.objects.get().status == "idle"
    events = Event.objects.filter(type="session_updated", audience="").order_by("id")
    assert [event.payload["status"] for event in events[published:]] == ["idle"]
