"""get_all_status in pages (beyond the contract): `limit` and `cursor` walk every session once, in
order, whatever is added meanwhile; without them the answer is the contract's, unchanged."""

from __future__ import annotations

import pytest

from tests.helpers import refused
from tests.helpers.calls import get_all_status


def walk(actor, **filters) -> list[str]:
    seen, cursor = [], None
    while True:
        page = get_all_status(actor=actor, limit=3, cursor=cursor, **filters)
        seen += [row["alias"] for row in page["sessions"]]
        assert len(page["sessions"]) <= 3
        cursor = page["next_cursor"]
        if cursor is None:
            return seen


def test_pages_list_every_session_once_in_order(agent, online):
    aliases = [f"agent-{n:02}" for n in range(10)]
    for alias in reversed(aliases):
        online(alias)

    assert walk(agent) == aliases
    whole = get_all_status(actor=agent)
    assert "next_cursor" not in whole and [row["alias"] for row in whole["sessions"]] == aliases


def test_a_session_added_behind_the_cursor_is_not_repeated_and_one_ahead_is_seen(agent, online):
    for alias in ("b", "d", "f", "h"):
        online(alias)
    first = get_all_status(actor=agent, limit=2)
    online("a")  # sorts before the cursor: not on a later page
    online("g")  # after it: on a later page
    rest = get_all_status(actor=agent, cursor=first["next_cursor"])

    assert [row["alias"] for row in first["sessions"]] == ["b", "d"]
    assert [row["alias"] for row in rest["sessions"]] == ["f", "g", "h"]
    assert rest["next_cursor"] is None
    assert sum(row["count"] for row in rest["summary"]) == 6  # the summary counts the whole scope


def test_filters_hold_across_pages(agent, online):
    for n in range(7):
        online(f"w{n}", status="working" if n % 2 else "idle")

    assert walk(agent, filter_status="working") == ["w1", "w3", "w5"]


@pytest.mark.parametrize("cursor", ["", "not-a-cursor", "a~b", "a~b~c", "a~b~1~2", "a b~c~1", "a~b~" + "9" * 19, 5])
def test_a_cursor_that_is_not_one_is_refused_by_name(agent, cursor):
    error = refused(get_all_status, actor=agent, cursor=cursor)

    assert (error.code, error.extra["field"]) == ("invalid_argument", "cursor")


@pytest.mark.parametrize("limit", [0, 1001, "3"])
def test_the_limit_is_checked(agent, limit):
    assert refused(get_all_status, actor=agent, limit=limit).extra["field"] == "limit"


@pytest.mark.parametrize("cursor", ["~~0", "zzz~%zz~123", "net_%7E~a.b-c_~1"])
def test_any_cursor_the_schema_admits_is_a_position(agent, online, cursor):
    """Schemathesis's rule too: a request valid by the published schema is never refused."""
    online("coder")

    assert get_all_status(actor=agent, limit=5, cursor=cursor)["ok"] is True


def test_aliases_with_the_separator_and_any_text_page_correctly(agent, online):
    aliases = ["a~b", "a%b", "a b", "a~", "é~~ü", "z"]
    for alias in aliases:
        online(alias)

    whole = [row["alias"] for row in get_all_status(actor=agent)["sessions"]]  # the database's collation
    assert walk(agent) == whole and sorted(whole) == sorted(aliases)
