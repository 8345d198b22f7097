"""report_node and list_nodes: a machine's supervisor reports itself and the
agents it hosts (issue 25 item 7), through the tool door as every transport calls it."""

from __future__ import annotations

import json

import pytest

from hub_agents.models import AgentSession, Node
from hub_core.events import EVENT_SCHEMA, EventType
from tests.helpers import refused
from tests.helpers.calls import list_nodes, report_node

RUNTIMES = [{"name": "claude", "version": "2.1.3"}, {"name": "codex", "version": "0.58.0"}]
AGENTS = [
    {"alias": "builder", "runtime": "claude", "concurrency": 2, "running": 1},
    {"alias": "reviewer", "runtime": "codex", "concurrency": 1, "running": 0, "paused": True},
]
FULL = {
    "node_id": "box-1",
    "node_name": "build box 1",
    "host": "box1.lan",
    "os": "Linux 6.8 x86_64",
    "agent_version": "0.9.0",
    "runtimes": RUNTIMES,
    "agents": AGENTS,
    "slots_total": 3,
    "slots_used": 1,
}


def node_of(node_id: str = "box-1") -> Node:
    return Node.objects.get(node_id=node_id)


def test_a_report_stores_what_the_node_says_and_answers_its_id(agent, network):
    assert report_node(actor=agent, **FULL) == {"ok": True, "node_id": "box-1"}

    node = node_of()
    assert (node.network_id, node.node_name, node.host, node.os, node.agent_version) == (
        network.pk, "build box 1", "box1.lan", "Linux 6.8 x86_64", "0.9.0",
    )  # fmt: skip
    assert node.runtimes == RUNTIMES and node.agents == AGENTS
    assert (node.slots_total, node.slots_used) == (3, 1)
    assert node.reported_at == node.last_seen_at


def test_a_field_left_out_keeps_what_the_node_said_before(agent, clock):
    report_node(actor=agent, **FULL)
    clock.tick(60)

    report_node(actor=agent, node_id="box-1", slots_used=3)

    node = node_of()
    assert (node.slots_used, node.slots_total, node.host, node.agents) == (3, 3, "box1.lan", AGENTS)
    assert node.reported_at == node.last_seen_at and node.last_seen_at > node.created_at
    assert Node.objects.count() == 1


def test_a_node_its_agents_reported_first_is_the_same_row(agent, online):
    online("builder", node_id="box-1", node_name="from report_status", agent="agent-node:claude")

    report_node(actor=agent, node_id="box-1", host="box1.lan")

    node = node_of()
    assert (node.host, node.node_name, node.runtime) == ("box1.lan", "from report_status", "claude")
    assert Node.objects.count() == 1


def test_the_sessions_of_the_aliases_it_hosts_run_on_it(agent, online):
    online("builder")
    online("reviewer", node_id="old-box")
    online("elsewhere", node_id="other-box")

    report_node(actor=agent, **FULL)

    nodes = dict(AgentSession.objects.values_list("alias", "node_id"))
    assert nodes == {"builder": "box-1", "reviewer": "box-1", "elsewhere": "other-box"}


def test_an_alias_it_no_longer_lists_keeps_its_last_node(agent, online):
    online("builder")
    report_node(actor=agent, **FULL)

    report_node(actor=agent, node_id="box-1", agents=[])

    assert AgentSession.objects.get(alias="builder").node_id == "box-1"
    assert node_of().agents == []


def test_an_alias_that_never_reported_is_linked_by_its_first_heartbeat(agent, online, make_actor, network):
    report_node(actor=agent, **FULL)  # builder has no session yet
    assert not AgentSession.objects.exists()

    online("builder", node_id="box-1")

    [row] = list_nodes(actor=make_actor(network, "viewer"))["nodes"]
    assert AgentSession.objects.get(alias="builder").node_id == row["node_id"] == "box-1"


def test_the_event_says_which_aliases_moved_onto_the_node(
    agent, online, network, published, django_capture_on_commit_callbacks
):
    online("builder")
    published.clear()
    with django_capture_on_commit_callbacks(execute=True):
        report_node(actor=agent, **FULL)
    with django_capture_on_commit_callbacks(execute=True):
        report_node(actor=agent, node_id="box-1", slots_used=2)

    first, second = [event for event in published if event.type == EventType.NODE_UPDATED]
    assert set(first.payload) == EVENT_SCHEMA[EventType.NODE_UPDATED]
    assert (first.network_id, first.audience) == (network.pk, ())
    assert first.payload == {
        "node_id": "box-1", "node_name": "build box 1", "slots_total": 3, "slots_used": 1, "linked": ["builder"],
    }  # fmt: skip
    assert json.loads(json.dumps(second.payload)) == {**first.payload, "slots_used": 2, "linked": []}


def test_a_refused_report_publishes_and_writes_nothing(viewer, published, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        error = refused(report_node, actor=viewer, **FULL)

    assert error.code == "permission_denied"
    assert not Node.objects.exists() and list(published) == []


def test_a_user_token_may_not_speak_for_a_node(make_actor, network):
    person = make_actor(user="bob", memberships={network: "member"})

    error = refused(report_node, actor=person, node_id="box-1", network_id=network.pk)

    assert error.code == "network_token_required" and "network token" in error.message
    assert not Node.objects.exists()


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"runtimes": [{"name": "claude"}] * 2}, "runtimes"),  # one runtime named twice
        ({"runtimes": [{"name": f"r{n}"} for n in range(21)]}, "runtimes"),
        ({"runtimes": [{"name": "claude", "version": "v" * 201}]}, "runtimes[0].version"),
        ({"runtimes": [{"version": "1.0"}]}, "runtimes[0].name"),
        ({"runtimes": ["claude 2.1"]}, "runtimes[0]"),
        ({"runtimes": {"name": "claude"}}, "runtimes"),
        ({"agents": [{**AGENTS[0], "model": "x"}]}, "agents[0]"),
        ({"agents": [{**AGENTS[0], "concurrency": 0}]}, "agents[0].concurrency"),
        ({"agents": [{**AGENTS[0], "running": -1}]}, "agents[0].running"),
        ({"agents": [{**AGENTS[0], "running": None}]}, "agents[0].running"),
        ({"agents": [{**AGENTS[0], "paused": "yes"}]}, "agents[0].paused"),
        ({"agents": [{**AGENTS[0], "alias": " "}]}, "agents[0].alias"),
        ({"agents": [AGENTS[0], AGENTS[0]]}, "agents"),
        ({"agents": [AGENTS[1]] * 501}, "agents"),
        ({"slots_total": -1}, "slots_total"),
        ({"slots_used": 1.5}, "slots_used"),
        ({"slots_used": True}, "slots_used"),
        ({"host": "h" * 201}, "host"),
        ({"node_id": ""}, "node_id"),
    ],
)
def test_bad_input_is_refused_naming_the_field(agent, arguments, field):
    error = refused(report_node, actor=agent, **{"node_id": "box-1", **arguments})

    assert (error.code, error.extra["field"]) == ("invalid_argument", field), error.message
    assert not Node.objects.exists()


def test_the_bounds_themselves_are_accepted(agent):
    runtimes = [{"name": f"r{n}", "version": "v" * 200} for n in range(20)]
    agents = [{"alias": f"a{n}", "runtime": "command", "concurrency": 100, "running": 100} for n in range(500)]

    report_node(actor=agent, node_id="n" * 200, runtimes=runtimes, agents=agents, slots_total=50_000, slots_used=0)

    node = node_of("n" * 200)
    assert (len(node.runtimes), len(node.agents), node.slots_total) == (20, 500, 50_000)


def test_list_nodes_shows_how_full_each_node_is_and_whether_it_is_still_there(agent, network, clock, settings):
    report_node(actor=agent, **FULL)
    report_node(actor=agent, node_id="a-box", host="a.lan")
    clock.tick(settings.COMMHUB_OFFLINE_AFTER_SECONDS - 1)
    report_node(actor=agent, node_id="a-box", slots_total=4, slots_used=4)
    clock.tick(2)

    first, second = list_nodes(actor=agent)["nodes"]  # by name: "a-box" (no name: its id), "build box 1"

    assert (first["node_id"], first["online"], first["slots_free"], first["agent_count"]) == ("a-box", True, 0, 0)
    assert (second["node_id"], second["online"]) == ("box-1", False)  # silent past the offline threshold
    assert (second["slots_total"], second["slots_used"], second["slots_free"]) == (3, 1, 2)
    assert second["agent_count"] == 2 and second["agents"] == AGENTS and second["runtimes"] == RUNTIMES
    assert (second["host"], second["os"], second["agent_version"], second["network_id"]) == (
        "box1.lan", "Linux 6.8 x86_64", "0.9.0", network.pk,
    )  # fmt: skip


def test_list_nodes_shows_only_the_callers_networks(agent, outsider, other_network):
    report_node(actor=agent, **FULL)
    report_node(actor=outsider, node_id="theirs")

    assert [row["node_id"] for row in list_nodes(actor=agent)["nodes"]] == ["box-1"]
    assert refused(list_nodes, actor=agent, network_id=other_network.pk).code == "permission_denied"
