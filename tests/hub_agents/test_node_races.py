"""A node's report racing its agents' heartbeats on real connections (issue 25 item 7).

report_node moves the sessions of the aliases it hosts onto it and writes its node row; each agent's
report_status writes its session, then the same node row. Both lock sessions before the node, so
neither waits on the other crosswise: on PostgreSQL a reversed order shows up here as a deadlock the
database breaks by failing one racer. On SQLite the writers are serialised and reach the same end.
"""

from __future__ import annotations

import pytest

from hub_agents.models import AgentSession, Node
from tests.helpers.calls import report_node, report_status
from tests.helpers.races import race

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.race]
ALIASES = [f"agent-{n}" for n in range(8)]
HOSTED = [{"alias": alias, "runtime": "command", "concurrency": 1, "running": 1} for alias in ALIASES]


@pytest.mark.parametrize("round_", range(3))
def test_a_node_report_and_its_agents_heartbeats_never_deadlock(agent, round_):
    for alias in ALIASES:
        report_status(actor=agent, resume_id=f"r-{alias}", alias=alias, status="idle", node_id="elsewhere")

    def heartbeat(alias: str):
        return lambda: report_status(
            actor=agent, resume_id=f"r-{alias}", alias=alias, status="working", node_id="box", node_name="box"
        )

    def report(agents: list[dict]):
        return lambda: report_node(actor=agent, node_id="box", agents=agents, slots_total=8, slots_used=8)

    outcomes = race(report(HOSTED), report(HOSTED[::-1]), *[heartbeat(alias) for alias in reversed(ALIASES)])

    assert all(outcome["ok"] for outcome in outcomes), outcomes
    assert set(AgentSession.objects.values_list("node_id", flat=True)) == {"box"}
    node = Node.objects.get(node_id="box")
    assert (node.slots_used, len(node.agents), node.node_name) == (8, 8, "box")
