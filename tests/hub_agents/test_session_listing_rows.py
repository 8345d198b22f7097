"""get_all_status reads its rows as tuples with the database writing the timestamps (issue 29): each
row must stay exactly the session as get_session_status shows it (hub_agents.selectors.session_row,
from the model), whatever the timestamp's fraction, the skills or the text in it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.utils import timezone

from hub_agents.models import AgentSession
from tests.helpers.calls import get_all_status, get_session_status


def seen(alias: str, **stamps: datetime) -> None:
    AgentSession.objects.filter(alias=alias).update(**stamps)


def test_listed_rows_are_the_sessions_as_each_is_shown_alone(agent, online):
    now = timezone.now().replace(microsecond=0)
    online("a-cut", model="opus", skills=["python", "review"], progress=0.5, score=7.25, max_concurrent=3)
    online("b-whole", task='räumen: ünïcode, "quoted", back\\slash', output="line\nnext\ttab", channels='["x"]')
    online("c-stale", status="working", server="s1", hostname="h1")
    online("d-none", skills=[])
    # A fraction a rounding clock would carry into the next second, none at all, a thousandth less
    # one microsecond, and an offline session (silent for a day).
    seen("a-cut", last_seen_at=now - timedelta(seconds=5) + timedelta(microseconds=999_600))
    seen("b-whole", last_seen_at=now - timedelta(seconds=3), created_at=datetime(2026, 1, 1, tzinfo=UTC))
    seen("c-stale", last_seen_at=now - timedelta(days=1), created_at=now - timedelta(days=2, microseconds=-999))
    seen("d-none", created_at=datetime(2026, 4, 12, 23, 59, 59, 999_999, tzinfo=UTC))

    listed = get_all_status(actor=agent)["sessions"]

    alone = [get_session_status(actor=agent, alias=row["alias"])["session"] for row in listed]
    assert [row["alias"] for row in listed] == ["a-cut", "b-whole", "c-stale", "d-none"]
    assert listed == alone
    assert [list(row) for row in listed] == [list(row) for row in alone]  # the keys' order too
    assert listed[0]["last_seen_at"].endswith(".999Z") and listed[0]["skills"] == ["python", "review"]
    assert listed[1]["created_at"] == "2026-01-01T00:00:00.000Z"
    assert listed[2]["status"] == "offline"
    assert listed[3]["created_at"] == "2026-04-12T23:59:59.999Z" and listed[3]["skills"] == []


def test_a_page_lists_the_same_rows(agent, online):
    for alias in ("p1", "p2", "p3"):
        online(alias, skills=["go"])

    first = get_all_status(actor=agent, limit=2)
    rest = get_all_status(actor=agent, limit=2, cursor=first["next_cursor"])

    assert first["sessions"] + rest["sessions"] == get_all_status(actor=agent)["sessions"]
    assert rest["next_cursor"] is None
