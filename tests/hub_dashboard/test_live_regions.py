"""Dashboard pages through the test client (issue 12: 12, 13, 16): the fleet table and its sorts,
status tiles as filters, time in status, one-key fragments, compression, and truthful badges."""

from __future__ import annotations

import gzip
import re
from datetime import timedelta

from django.utils import timezone

from hub_agents.models import AgentSession
from hub_tasks.models import Task, TaskEvent
from tests.helpers.calls import send_task
from tests.helpers.dashboard import aliases_in_order


def test_the_fleet_table_sorts_by_status_last_seen_and_current_task_age(login, online, agent):
    now = timezone.now()
    online("alpha", status="idle")
    online("bravo", status="error")
    online("charlie", status="working")
    online("delta", status="working")
    for alias, minutes in [("alpha", 1), ("bravo", 3), ("charlie", 2), ("delta", 4)]:  # all still online
        AgentSession.objects.filter(alias=alias).update(last_seen_at=now - timedelta(minutes=minutes))
    for alias, hours in [("charlie", 3), ("delta", 1)]:  # charlie's task has run longest
        task_id = send_task(actor=agent, alias=alias, task=f"job for {alias}")["task_id"]
        Task.objects.filter(pk=task_id).update(status="running", started_at=now - timedelta(hours=hours))
        online(alias, status="working", task=task_id)
        seen = now - timedelta(minutes=2 if alias == "charlie" else 4)
        AgentSession.objects.filter(alias=alias).update(last_seen_at=seen)
    browser = login()

    table = browser.get("/fleet/?view=table").content.decode()
    assert '<table class="list fleet-table' in table and "<article" not in table
    assert "job for charlie" in table  # the current task, and how long it has run
    assert re.search(r'data-label="Task age"><span[^>]*>3\W*h', table)
    assert aliases_in_order(browser.get("/fleet/?view=table&sort=status").content.decode()) == [
        "bravo", "charlie", "delta", "alpha",
    ]  # fmt: skip
    assert aliases_in_order(browser.get("/fleet/?view=table&sort=seen").content.decode()) == [
        "delta", "bravo", "charlie", "alpha",
    ]  # fmt: skip
    assert aliases_in_order(browser.get("/fleet/?view=table&sort=age").content.decode())[:2] == ["charlie", "delta"]
    assert aliases_in_order(browser.get("/fleet/?view=table&sort=-age").content.decode())[:2] == ["delta", "charlie"]
    cards = browser.get("/fleet/").content.decode()
    assert "<article" in cards and "fleet-table" not in cards


def test_status_tiles_filter_the_fleet_and_keep_the_view(login, online):
    online("alpha", status="idle")
    online("bravo", status="error")
    browser = login()

    page = browser.get("/fleet/?view=table&status=error").content.decode()

    assert aliases_in_order(page) == ["bravo"]
    assert 'class="count s-error chosen" href="?view=table&amp;status=error"' in page
    assert 'href="?view=table&amp;status=idle"' in page  # every tile is a filter link, keeping the view
    assert "No agent is blocked right now" in browser.get("/fleet/?status=blocked").content.decode()


def test_the_task_list_shows_time_in_status_sorts_by_it_and_has_a_search_box(login, agent):
    now = timezone.now()
    ids = {}
    for text, hours in [("fresh", 0), ("stale", 5), ("middling", 2)]:
        ids[text] = send_task(actor=agent, alias="coder", task=f"{text} task")["task_id"]
        TaskEvent.objects.filter(task_id=ids[text]).update(created_at=now - timedelta(hours=hours))
    browser = login()

    page = browser.get("/tasks/").content.decode()
    assert "In status" in page and re.search(r'data-label="In status"[^>]*>5\W*h', page)
    assert re.search(r'<input type="search" name="text"[^>]*aria-label="Search task text"', page)
    longest = browser.get("/tasks/?sort=status_since").content.decode()
    assert [longest.index(f"{t} task") for t in ("stale", "middling", "fresh")] == sorted(
        longest.index(f"{t} task") for t in ("stale", "middling", "fresh")
    )
    freshest = browser.get("/tasks/?sort=-status_since").content.decode()
    assert freshest.index("fresh task") < freshest.index("middling task") < freshest.index("stale task")
    assert 'name="sort" value="status_since"' in longest  # a search keeps the chosen order


def test_a_fragment_for_one_key_holds_only_that_card_or_row(login, online, agent):
    for n in range(20):
        online(f"agent-{n:02}", status="working", task=f"a long description of step {n}")
    sent = [send_task(actor=agent, alias="agent-01", task=f"task {n}")["task_id"] for n in range(20)]
    browser = login()

    whole = browser.get("/fleet/?fragment=fleet").content.decode()
    one = browser.get("/fleet/?fragment=fleet&only=agent-03").content.decode()
    assert aliases_in_order(one) == ["agent-03"] and 'data-part="counts"' in one
    assert len(one) * 5 < len(whole)
    row = browser.get(f"/tasks/?fragment=tasks&only={sent[4]}").content.decode()
    assert re.findall(r'<tr data-key="([^"]+)"', row) == [sent[4]]
    assert "<table><tbody><tr" in row  # a bare <tr> after the tiles would be dropped by the HTML parser


def test_pages_and_fragments_are_compressed(login, online):
    for n in range(5):
        online(f"agent-{n}", status="idle")
    browser = login()

    for url in ("/fleet/", "/fleet/?fragment=fleet", "/tasks/", "/dispatch/"):
        reply = browser.get(url, HTTP_ACCEPT_ENCODING="gzip, deflate")
        assert reply["Content-Encoding"] == "gzip", url
        assert b"</" in gzip.decompress(reply.content)
    assert "Content-Encoding" not in browser.get("/fleet/")  # only for clients that ask


def test_the_first_socket_frame_needs_no_refresh_the_page_says_where_it_stood(
    login, online, network, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):  # the event is sealed in the log after commit
        online("alpha")
    browser = login()

    page = browser.get("/fleet/").content.decode()

    after = re.search(r'data-after="([^"]*)"', page).group(1)
    network_id, seq = after.split(":")
    assert network_id == network.pk and int(seq) > 0  # the socket replays from here: nothing is missed


def test_every_page_says_truthfully_whether_it_is_live(login, agent):
    task_id = send_task(actor=agent, alias="coder", task="ship it")["task_id"]
    browser = login()

    for url in ("/fleet/", "/tasks/", f"/tasks/{task_id}/", "/completions/"):
        assert 'id="live"' in browser.get(url).content.decode(), url
    for url in ("/dispatch/", "/audit/", "/tasks/nothing-here/"):
        page = browser.get(url).content.decode()
        assert 'id="live"' not in page and ">static</span>" in page, url


def test_a_viewer_gets_a_note_not_the_dispatch_and_broadcast_forms(login):
    member = login().get("/dispatch/").content.decode()
    viewer = login(role="viewer", username="watcher").get("/dispatch/").content.decode()

    assert 'name="task"' in member and 'name="message"' in member
    assert 'name="task"' not in viewer and 'name="message"' not in viewer and "<textarea" not in viewer
    assert "Read-only access" in viewer


def test_the_favicon_is_served(client, login):
    icon = client.get("/favicon.ico")  # no login: browsers ask for it on the login page too

    assert icon.status_code == 200 and icon["Content-Type"] == "image/x-icon"
    assert b"".join(icon).startswith(b"\x00\x00\x01\x00")
    page = login().get("/fleet/").content.decode()
    assert re.search(r'<link rel="icon" href="/static/dashboard/favicon\.svg"', page)
