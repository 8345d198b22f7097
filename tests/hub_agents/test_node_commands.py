"""Commands to nodes (issue 28 item 2), through the tool door as every transport calls them:
node_command (owners and admins, audited, pushed to the node's agents' feeds after commit),
node_command_ack (the node's own token), node_commands, and the sweep expiring what no node answered."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from hub_agents.models import AuditEntry, NodeCommand
from hub_events.models import Event
from tests.helpers import refused
from tests.helpers.calls import node_command, node_command_ack, node_commands, report_node

AGENTS = [
    {"alias": "builder", "runtime": "claude", "concurrency": 2, "running": 1},
    {"alias": "reviewer", "runtime": "codex", "concurrency": 1, "running": 0},
]


@pytest.fixture
def box(agent):
    report_node(actor=agent, node_id="box-1", agents=AGENTS, slots_total=3, slots_used=1)
    return "box-1"


def feed(alias: str) -> list[dict]:
    return [row.payload for row in Event.objects.filter(audience=alias, type="node_command").order_by("id")]


def test_an_owner_pauses_an_agent_and_its_feed_carries_the_command(owner, box, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        sent = node_command(actor=owner, node_id=box, kind="pause", alias="builder")["command"]

    assert sent["status"] == "sent" and sent["kind"] == "pause" and sent["alias"] == "builder"
    assert feed("builder") == [
        {"command_id": sent["command_id"], "node_id": "box-1", "kind": "pause", "alias": "builder",
         "task_id": None, "value": None}
    ]  # fmt: skip
    assert feed("reviewer") == []
    audit = AuditEntry.objects.get(action=AuditEntry.Action.NODE_COMMAND_SENT)
    assert audit.target == "node box-1" and audit.detail["command_id"] == sent["command_id"]


def test_a_node_wide_command_reaches_every_agent_it_hosts(owner, box):
    sent = node_command(actor=owner, node_id=box, kind="drain")["command"]

    assert (
        [p["command_id"] for p in feed("builder")]
        == [p["command_id"] for p in feed("reviewer")]
        == [sent["command_id"]]
    )


def test_the_node_acknowledges_with_the_tail_lines(owner, agent, box, published, django_capture_on_commit_callbacks):
    sent = node_command(actor=owner, node_id=box, kind="tail", task_id="task_1", value=3)["command"]
    with django_capture_on_commit_callbacks(execute=True):
        acked = node_command_ack(actor=agent, command_id=sent["command_id"], ok=True, lines=["a", "b", "[redacted]"])

    assert acked["command"]["status"] == "done" and acked["command"]["lines"] == ["a", "b", "[redacted]"]
    listed = node_commands(actor=owner, node_id=box)["commands"]
    assert [(c["command_id"], c["status"], c["value"]) for c in listed] == [(sent["command_id"], "done", 3)]
    assert [(e.type, e.payload["status"]) for e in published] == [("node_command_updated", "done")]


def test_a_failed_command_keeps_the_nodes_reason_and_is_answered_once(owner, agent, box):
    sent = node_command(actor=owner, node_id=box, kind="stop", task_id="task_9")["command"]
    failed = node_command_ack(actor=agent, command_id=sent["command_id"], ok=False, reason="no run of task_9 here")

    assert (failed["command"]["status"], failed["command"]["reason"]) == ("failed", "no run of task_9 here")
    again = refused(node_command_ack, actor=agent, command_id=sent["command_id"], ok=True)
    assert again.code == "command_answered"


@pytest.mark.parametrize("role", ["viewer", "member"])
def test_a_viewer_and_a_member_are_refused_every_command(make_actor, network, box, role):
    actor = make_actor(network, role)
    for kind, extra in [("pause", {}), ("drain", {}), ("stop", {"task_id": "t"}), ("tail", {"task_id": "t"}),
                        ("restart_session", {"alias": "builder"}),
                        ("set_concurrency", {"alias": "builder", "value": 2})]:  # fmt: skip
        assert refused(node_command, actor=actor, node_id=box, kind=kind, **extra).code == "permission_denied"
    assert not NodeCommand.objects.exists()


def test_each_kind_takes_what_it_needs(owner, box):
    assert refused(node_command, actor=owner, node_id=box, kind="stop").code == "invalid_argument"
    assert refused(node_command, actor=owner, node_id=box, kind="drain", alias="builder").code == "invalid_argument"
    too_many = refused(node_command, actor=owner, node_id=box, kind="set_concurrency", alias="builder", value=101)
    assert too_many.code == "invalid_argument"
    stranger = refused(node_command, actor=owner, node_id=box, kind="pause", alias="nobody")
    assert stranger.code == "agent_not_found"
    assert refused(node_command, actor=owner, node_id="box-9", kind="drain").code == "node_not_found"


def test_another_networks_token_may_not_answer_the_command(owner, box, make_actor, other_network):
    sent = node_command(actor=owner, node_id=box, kind="drain")["command"]
    stranger = make_actor(other_network, "member")

    assert refused(node_command_ack, actor=stranger, command_id=sent["command_id"], ok=True).code == "command_not_found"


def test_a_user_token_may_not_answer_for_a_node(make_actor, network, box):
    person = make_actor(user="olive", memberships={network: "owner"})
    sent = node_command(actor=person, node_id=box, kind="drain")["command"]

    assert refused(node_command_ack, actor=person, command_id=sent["command_id"], ok=True).code == (
        "network_token_required"
    )


def test_a_command_to_a_node_known_offline_is_refused_up_front(clock, owner, box, settings):
    clock.tick(settings.COMMHUB_OFFLINE_AFTER_SECONDS + 1)

    offline = refused(node_command, actor=owner, node_id=box, kind="pause")
    assert offline.code == "node_offline" and "offline" in offline.message


def test_a_command_nobody_acknowledges_expires_at_the_sweep_with_that_reason(clock, owner, agent, box):
    sent = node_command(actor=owner, node_id=box, kind="restart_session", alias="reviewer")["command"]
    call_command("sweep", "--once", verbosity=0)
    assert node_commands(actor=owner, command_id=sent["command_id"])["commands"][0]["status"] == "sent"

    clock.tick(61)
    call_command("sweep", "--once", verbosity=0)

    (row,) = node_commands(actor=owner, command_id=sent["command_id"])["commands"]
    assert row["status"] == "expired" and "did not acknowledge" in row["reason"] and "offline" in row["reason"]
    late = refused(node_command_ack, actor=agent, command_id=sent["command_id"], ok=True)
    assert late.code == "command_answered"
