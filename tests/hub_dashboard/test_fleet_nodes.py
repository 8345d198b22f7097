"""The fleet page's nodes (issue 25 item 7): each agent's card and row name the machine it runs on,
titled with its host and OS and linked to the node strip, which shows each node's host, OS, runtimes,
agents, slots and last heartbeat, offline past the threshold agents go offline after."""

from __future__ import annotations

import re

from hub_dashboard.templatetags.hub_format import node_anchor
from tests.helpers.calls import report_node

BOX = {
    "node_id": "box-1",
    "node_name": "build box 1",
    "host": "box1.lan",
    "os": "Linux 6.8 x86_64",
    "agent_version": "0.9.0",
    "runtimes": [{"name": "claude", "version": "2.1.3"}, {"name": "codex", "version": "0.58.0"}],
    "agents": [
        {"alias": "builder", "runtime": "claude", "concurrency": 4, "running": 2},
        {"alias": "reviewer", "runtime": "codex", "concurrency": 4, "running": 1},
    ],
    "slots_total": 8,
    "slots_used": 3,
}


def strip_of(page: str) -> str:
    return page[page.index('data-live="nodes"') :]


def test_the_node_strip_shows_host_os_runtimes_agents_and_slots(login, agent):
    report_node(actor=agent, **BOX)

    strip = strip_of(login().get("/fleet/").content.decode())

    for expected in ("build box 1", "3 of 8 slots", "box1.lan · Linux 6.8 x86_64", "commhub-agent 0.9.0"):
        assert expected in strip, expected
    assert "claude 2.1.3" in strip and "codex 0.58.0" in strip
    assert "2 agents" in strip and "width: 38%" in strip  # 3 of 8
    assert f'id="{node_anchor("box-1")}"' in strip and "offline" not in strip


def test_each_agent_names_its_node_linked_and_titled_with_host_and_os(login, agent, online):
    online("builder", status="working", hostname="box1.lan")
    online("loner", status="idle")
    report_node(actor=agent, **BOX)
    browser = login()

    for view in ("", "?view=table"):
        page = browser.get(f"/fleet/{view}").content.decode()
        fleet = page[: page.index('data-live="nodes"')]
        [link] = re.findall(r'<a href="#node-[0-9a-f]+" class="node-link"[^>]*>[^<]*</a>', fleet)
        assert f'href="#{node_anchor("box-1")}"' in link and ">build box 1</a>" in link
        assert 'title="box1.lan · Linux 6.8 x86_64 · 3 of 8 slots"' in link
        loner = fleet[fleet.index('data-alias="loner"') :]
        assert "node-link" not in loner[: loner.index("</article>" if not view else "</tr>")]


def test_a_node_silent_past_the_offline_threshold_reads_offline(login, agent, online, clock, settings):
    online("builder")
    report_node(actor=agent, **BOX)
    clock.tick(settings.COMMHUB_OFFLINE_AFTER_SECONDS + 1)

    page = login().get("/fleet/").content.decode()

    assert 'class="node stale"' in strip_of(page) and "offline</b>, last seen" in strip_of(page)
    assert 'class="node-link stale"' in page and "slots · offline" in page


def test_the_nodes_fragment_is_the_strip_alone(login, agent, online):
    online("builder", status="working", task="a task only the fleet shows")
    report_node(actor=agent, **BOX)

    fragment = login().get("/fleet/?fragment=nodes").content.decode()

    assert "3 of 8 slots" in fragment and "<h2>Nodes" in fragment
    assert "a task only the fleet shows" not in fragment and "Open pool" not in fragment


def test_a_fleet_without_nodes_shows_no_strip(login, online):
    online("builder")

    page = login().get("/fleet/").content.decode()

    assert 'data-live="nodes"' in page and "<h2>Nodes" not in page
