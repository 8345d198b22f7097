"""What an operator triaging a fleet reads first (issue 24 items 10 and 11): problems first in cards
and table, an agent's error output on its card and row, and each open task's row and page saying
when its agent is in error, offline or silent."""

from __future__ import annotations

import re

import pytest

from tests.helpers.calls import ack_inbox, send_task
from tests.helpers.dashboard import aliases_in_order

pytestmark = pytest.mark.django_db

TRACEBACK = "\n".join(
    ["Traceback (most recent call last):"]
    + [f'  File "/srv/app/step{n}.py", line {n}, in step{n}' for n in range(1, 9)]
    + ['psycopg.OperationalError: connection to server at "db" failed: Connection refused']
)


def test_the_fleet_lists_problems_first_in_cards_and_table(login, online, agent, clock):
    online("gone", "idle")
    online("off", "working")
    send_task(actor=agent, alias="off", task="waits for an agent that left", from_session="lead")
    online("said-bye", "offline")
    clock.tick(601)  # gone and off stop heartbeating: offline (said-bye said so, and has no work)
    for alias, status in [("alpha", "idle"), ("beta", "working"), ("zed", "error"), ("mid", "blocked")]:
        online(alias, status)
    online("wait", "waiting_input")
    browser = login()

    expected = ["zed", "mid", "wait", "off", "beta", "alpha", "gone", "said-bye"]
    assert aliases_in_order(browser.get("/fleet/").content.decode()) == expected
    table = browser.get("/fleet/?view=table").content.decode()
    assert aliases_in_order(table) == expected
    # The order shown is the status sort's: its header says so and reverses it.
    assert re.search(r'<a class="sort on" href="\?[^"]*sort=-status[^"]*"[^>]*>Status', table)
    assert aliases_in_order(browser.get("/fleet/?view=table&sort=-status").content.decode()) == expected[::-1]


def test_every_sort_header_looks_like_a_control(login, online):
    online("coder")

    table = login().get("/fleet/?view=table&sort=seen").content.decode()

    headers = re.findall(r'<a class="sort[^"]*"[^>]*>(.*?)</a>', table)
    assert len(headers) == 3
    assert all(re.search(r"[▲▼↕]", header) for header in headers), headers


def test_an_agent_in_error_shows_the_last_lines_of_its_output(login, online):
    online("qa", status="error", task="run the suite", output=TRACEBACK)
    online("coder", status="working", output="compiling 12 of 40")
    browser = login()

    for view in ("cards", "table"):
        page = browser.get(f"/fleet/?view={view}").content.decode()
        (shown,) = re.findall(r'<details class="output".*?</details>', page, flags=re.S)
        summary = re.search(r"<summary[^>]*>(.*?)</summary>", shown, flags=re.S).group(1)
        assert "psycopg.OperationalError: connection to server at &quot;db&quot; failed" in summary
        assert "step8.py" in shown and "Traceback (most recent call last):" in shown  # expanded: the tail
        assert "compiling 12 of 40" not in page  # a working agent's output is not an alarm


def test_a_task_row_and_page_say_when_its_agent_is_in_error_offline_or_silent(login, online, agent, clock):
    online("quiet", "working")
    quiet = send_task(actor=agent, alias="quiet", task="task of a silent agent", from_session="lead")["task_id"]
    ack_inbox(actor=agent, alias="quiet", message_id=quiet)
    clock.tick(601)
    online("qa", status="error", output=TRACEBACK)
    online("left", status="offline")
    online("fine", status="working")
    ids = {
        alias: send_task(actor=agent, alias=alias, task=f"task of {alias}", from_session="lead")["task_id"]
        for alias in ("qa", "left", "fine", "nobody")
    }
    ids["quiet"] = quiet
    browser = login()

    rows = browser.get("/tasks/").content.decode()
    said = {
        task_id: re.search(r'<td data-label="To">(.*?)</td>', row, flags=re.S).group(1)
        for task_id, row in re.findall(r'<tr data-key="([^"]+)".*?>(.*?)</tr>', rows, flags=re.S)
    }
    assert "agent in error" in said[ids["qa"]] and "psycopg.OperationalError" in said[ids["qa"]]
    assert "agent offline" in said[ids["left"]]
    assert "agent silent" in said[ids["quiet"]]
    assert "no agent" in said[ids["nobody"]]
    assert "health" not in said[ids["fine"]]

    for alias, words in [("qa", "agent in error"), ("quiet", "agent silent"), ("left", "agent offline")]:
        page = browser.get(f"/tasks/{ids[alias]}/").content.decode()
        (record,) = re.findall(r'<dl class="record">.*?</dl>', page, flags=re.S)
        assert words in record
    assert "health" not in browser.get(f"/tasks/{ids['fine']}/").content.decode()
