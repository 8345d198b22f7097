"""`commhub-agent node` with a token bound to its aliases (issue 26): one token per machine, acting
only as the agents its config declares. The node asks the hub who its token is (GET /api/v1/whoami)
and refuses, at start, an agent the token may not act as; a node bound to its agents runs in a strict
network. The node's matcher mirrors the hub's: checked here against it."""

from __future__ import annotations

import sys

import pytest

from hub_agents import identity as hub_identity
from hub_agents.models import Network
from hub_agents.services import token_create
from tests.helpers.access import make_strict
from tests.helpers.live import AGENT_DIR, Agent, Hub
from tests.helpers.node import NodeProcess, command_agent, git_repository, node_toml, runs, send, task, wait_finished

sys.path.insert(0, str(AGENT_DIR))
from commhub_agent.node import identity as node_identity

BINDINGS = [["builder"], ["build-*"], ["*-review"], ["a*b*c"], ["a.b", "v[1]"], ["x+", "y?", "node-1-*"], []]
ALIASES = ["builder", "build-", "build-1", "rebuild-1", "code-review", "a-x-b-y-c", "a-x-c", "axb", "a.b", "v[1]",
           "v1", "x+", "xx", "y?", "node-1-claude", "node-11-claude", "Builder", "builder "]  # fmt: skip


@pytest.mark.parametrize("binding", BINDINGS)
def test_the_nodes_matcher_is_the_hubs(binding):
    for alias in ALIASES:
        assert node_identity.binding_matches(binding, alias) is hub_identity.binding_matches(binding, alias), alias


def start(hub: Hub, token: Agent, tmp_path, agents: dict) -> NodeProcess:
    config = tmp_path / "node.toml"
    config.write_text(node_toml(hub, tmp_path / "state", agents))
    return NodeProcess(hub, token, config, tmp_path / "node.log").start()


@pytest.fixture
def strict(network: Network) -> Network:
    return make_strict(network)


@pytest.fixture
def lead(strict: Network) -> Agent:
    """Who sends the tasks, in a strict network: a token bound to "lead", the sender tasks name."""
    return Agent(token_create(network=strict, role="member", name="lead", aliases=["lead"])[1])


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_a_node_bound_to_its_aliases_runs_their_tasks_in_a_strict_network(live_hub, strict, lead, tmp_path):
    repo, log = git_repository(tmp_path / "repo"), tmp_path / "runs.log"
    box = Agent(token_create(network=strict, role="member", name="box-1", aliases="cmd-1,review-*")[1])
    node = start(live_hub, box, tmp_path, {"cmd-1": command_agent(repo, log), "review-a": command_agent(repo, log)})
    try:
        ids = [send(live_hub, lead, alias, f"job {alias} write") for alias in ("cmd-1", "review-a", "cmd-1")]
        rows = wait_finished(live_hub, lead, ids, within=60)
    finally:
        code = node.stop()
    output = node.output()
    assert code == 0, output
    assert f"token {box.token[:12]} (box-1) bound to cmd-1, review-*" in output
    for row in rows.values():
        assert row["status"] == "replied", (row, output)
        # The node's own reports went through as the agents: the reply is signed by the alias that ran it.
        assert row["from_name"] == "lead" and row["to_name"] in ("cmd-1", "review-a")
    assert runs(log) == {task_id: 1 for task_id in ids}


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_a_node_naming_an_alias_outside_its_binding_is_refused_at_start(live_hub, strict, lead, tmp_path):
    repo, log = git_repository(tmp_path / "repo"), tmp_path / "runs.log"
    box = Agent(token_create(network=strict, role="member", name="box-1", aliases=["cmd-1"])[1])
    waiting = send(live_hub, lead, "cmd-1", "job early write")

    node = start(live_hub, box, tmp_path, {"cmd-1": command_agent(repo, log), "deploy": command_agent(repo, log)})
    assert node.process is not None
    code = node.process.wait(timeout=60)

    output = node.output()
    assert code == 2, output
    assert (
        f"{node.config}: agents.deploy: the node's token ({box.token[:12]} (box-1)) acts only as cmd-1, not as "
        "'deploy': bind the node's token to every agent of this config (python manage.py create_token --network "
        "alpha --name test-node --alias cmd-1,deploy), or remove this agent"
    ) in output
    assert "agents.cmd-1" not in output and "node: started:" not in output
    # No agent ran, not even the one the token may act as: its task still waits.
    assert task(live_hub, lead, waiting)["status"] == "delivered"
    assert not log.exists()


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_an_unbound_node_token_is_refused_at_start_in_a_strict_network(live_hub, strict, worker, tmp_path):
    repo, log = git_repository(tmp_path / "repo"), tmp_path / "runs.log"

    node = start(live_hub, worker, tmp_path, {"cmd-1": command_agent(repo, log)})
    assert node.process is not None
    code = node.process.wait(timeout=60)

    output = node.output()
    assert code == 2, output
    assert "$COMMHUB_TOKEN: network alpha is strict: only a token bound to an alias acts as it" in output
    assert "create_token --network alpha --name test-node --alias cmd-1" in output
