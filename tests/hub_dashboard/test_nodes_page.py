"""The Nodes page (issue 28 item 1): every node with its host, OS, runtimes, agents (state, running
task and since when, slots, usage today), last seen and its commands; owners and admins send
commands from it (the same door as MCP and REST), members and viewers see no buttons and are refused."""

from __future__ import annotations

from hub_agents.models import AuditEntry, NodeCommand
from hub_dashboard.templatetags.hub_format import node_anchor
from tests.helpers.calls import node_command, node_command_ack, report_completion, report_node, send_task_id
from tests.helpers.dashboard import text

BOX = {
    "node_id": "box-1",
    "node_name": "build box 1",
    "host": "box1.lan",
    "os": "Linux 6.8 x86_64",
    "agent_version": "0.9.0",
    "runtimes": [{"name": "claude", "version": "2.1.3"}],
    "agents": [
        {"alias": "builder", "runtime": "claude", "concurrency": 2, "running": 1},
        {"alias": "reviewer", "runtime": "claude", "concurrency": 1, "running": 0, "paused": True},
    ],
    "slots_total": 3,
    "slots_used": 1,
}


def test_the_page_shows_each_node_its_agents_their_work_and_usage_today(login, agent, online):
    done = send_task_id(agent, "an earlier job", alias="builder")
    online("builder", status="working", task=done, node_id="box-1")
    report_completion(
        actor=agent, alias="builder", task=done, result="ok", tokens_in=1200, tokens_out=300, cost_usd=0.25
    )
    task_id = send_task_id(agent, "port the parser", alias="builder")
    online("builder", status="working", task=task_id, node_id="box-1", session_id="sess-42")
    report_node(actor=agent, **BOX)

    page = text(login().get("/nodes/"))

    for expected in ("build box 1", "1 used · 2 free of 3 slots", "box1.lan · Linux 6.8 x86_64", "claude 2.1.3"):
        assert expected in page, expected
    assert "builder" in page and "port the parser" in page and "session sess-42" in page
    assert "1 run, 1200 tokens in, 300 out, $0.2500" in page  # the node's usage today
    assert "paused" in page and "1 of 2" in page and "0 of 1" in page


def test_an_owner_sends_a_command_from_the_page_and_sees_its_state(login, agent, online):
    report_node(actor=agent, **BOX)
    browser = login("owner")

    reply = browser.post("/nodes/box-1/command/", {"kind": "pause", "alias": "builder"}, follow=True)

    command = NodeCommand.objects.get()
    assert (command.kind, command.alias, command.status) == ("pause", "builder", "sent")
    (audit,) = AuditEntry.objects.filter(action="node.command_sent")
    assert audit.target == "node box-1" and audit.detail["alias"] == "builder"
    assert f"#{node_anchor('box-1')}" in reply.redirect_chain[-1][0]
    assert "Sent pause to box-1" in text(reply)
    node_command_ack(actor=agent, command_id=command.command_id, ok=False, reason="no such agent here")
    page = text(browser.get("/nodes/"))
    assert "failed" in page and "no such agent here" in page


def test_a_tail_shows_its_lines_on_the_page(login, agent, make_actor, network):
    report_node(actor=agent, **BOX)
    sent = node_command(actor=make_actor(network, "owner"), node_id="box-1", kind="tail", task_id="task_7")["command"]
    node_command_ack(actor=agent, command_id=sent["command_id"], ok=True, lines=["step 1", "token [redacted]"])

    page = login("viewer").get("/nodes/").content.decode()

    assert "step 1\ntoken [redacted]</pre>" in page


def test_members_and_viewers_see_no_command_buttons_and_are_refused(login, agent):
    report_node(actor=agent, **BOX)
    for role, name, why in (("member", "mia", "Only owners and admins"), ("viewer", "vic", "may read but not write")):
        browser = login(role, name)
        assert "Drain" not in text(browser.get("/nodes/"))
        reply = browser.post("/nodes/box-1/command/", {"kind": "drain"}, follow=True)
        assert 'class="notice error"' in text(reply) and why in text(reply)
    assert not NodeCommand.objects.exists()


def test_the_page_is_live_on_node_and_command_events(login, agent):
    report_node(actor=agent, **BOX)

    fragment = login().get("/nodes/", {"fragment": "nodes"}).content.decode()
    page = login("owner", "olive").get("/nodes/").content.decode()

    assert 'data-live="nodes"' in page and "build box 1" in fragment and "<html" not in fragment
