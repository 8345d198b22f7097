"""A concurrency cap across two live hub processes and two nodes (issue 28): a cap of 2 with 10
tasks queued runs never more than 2 at once, and the 8 that waited run in priority order.

Each node (`commhub-agent node`, command runtime, room for 3 runs) talks to a hub process of its
own; both share the test database. The tasks are all sent before the nodes start, so the order
of release is the hub's alone. What runs at once is replayed from the hub's history (TaskEvent id
order): a release is written in the transaction that ended a run, under the cap's row lock.
"""

from __future__ import annotations

import uuid

import pytest

from hub_agents.services import token_create
from hub_tasks.models import TaskEvent
from tests.helpers.calls import cap_set
from tests.helpers.live import Agent
from tests.helpers.node import NodeProcess, command_agent, git_repository, node_toml, runs, send, wait_finished

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.live]
PRIORITIES = ["low", "normal", "high", "low", "high", "normal", "low", "high", "normal", "low"]
RANK = {"high": 0, "normal": 1, "low": 2}
WITH_AGENT = {"delivered", "acked", "running"}


def test_a_cap_of_two_holds_two_nodes_on_two_hubs_to_two_runs(
    live_hub, hub_server, dispatcher, worker, network, owner, tmp_path
):
    other_hub = hub_server({"COMMHUB_RATE_LIMIT_PREFIX": f"agent-test-{uuid.uuid4().hex}"})
    other_worker = Agent(token_create(network=network, role="member", name="companion-2")[1])
    cap_set(actor=owner, scope="all", limit=2)
    ids = [send(live_hub, dispatcher, f"cmd-{1 + n % 2}", f"job {n}", priority=p) for n, p in enumerate(PRIORITIES)]

    repo = git_repository(tmp_path / "repo")
    log = tmp_path / "runs.log"
    nodes = []
    for number, (hub, token) in enumerate(((live_hub, worker), (other_hub, other_worker)), start=1):
        home = tmp_path / f"node-{number}"
        home.mkdir()
        config = home / "node.toml"
        agents = {f"cmd-{number}": command_agent(repo, log, concurrency=3)}
        config.write_text(node_toml(hub, home / "state", agents))
        nodes.append(NodeProcess(hub, token, config, home / "node.log").start())
    try:
        rows = wait_finished(other_hub, dispatcher, ids, within=120)
    finally:
        for node in nodes:
            node.stop()

    assert {row["status"] for row in rows.values()} == {"replied"}, [node.output() for node in nodes]
    assert runs(log) == {task_id: 1 for task_id in ids}
    held, most, delivered = set(), 0, []
    for task_id, to_status in (
        TaskEvent.objects.filter(task_id__in=ids).order_by("pk").values_list("task_id", "to_status")
    ):
        if to_status in WITH_AGENT:
            if to_status == "delivered":
                delivered.append(task_id)
            held.add(task_id)
        else:
            held.discard(task_id)
        most = max(most, len(held))
    assert most == 2
    waited = sorted(range(2, 10), key=lambda n: (RANK[PRIORITIES[n]], n))
    assert delivered == ids[:2] + [ids[n] for n in waited]  # the first two by send_task, the rest released
