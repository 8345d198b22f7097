"""Approvers racing on real threads (row locks for real on PostgreSQL; serialised writes on SQLite):
a held broadcast runs once, whatever number of approvers say yes at once, and never when a
rejection wins."""

from __future__ import annotations

import pytest

from hub_approvals.models import ApprovalRule
from hub_core.errors import HubError
from hub_tasks.models import InboxMessage
from tests.helpers.calls import broadcast, decide_approval
from tests.helpers.races import race

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.race]
ROUNDS = range(4)
APPROVERS = 8


@pytest.fixture
def approvers(make_actor, network):
    return [make_actor(network, "admin") for _ in range(APPROVERS)]


@pytest.fixture
def held(network, agent, online):
    for alias in ("coder-1", "coder-2"):
        online(alias)
    ApprovalRule.objects.create(network=network, name="two keys", tool="broadcast", tier=ApprovalRule.Tier.TWO)

    def hold(text: str) -> str:
        return broadcast(actor=agent, message=text)["approval_id"]

    return hold


def delivered(text: str) -> int:
    return InboxMessage.objects.filter(type=InboxMessage.Type.BROADCAST, content=text).count()


@pytest.mark.parametrize("round_", ROUNDS)
def test_racing_approvals_run_the_call_once(held, approvers, round_):
    text = f"deploy, round {round_}"
    approval_id = held(text)

    outcomes = race(
        *(lambda a=a: decide_approval(actor=a, approval_id=approval_id, decision="approve") for a in approvers)
    )

    ran = [o for o in outcomes if not isinstance(o, HubError) and o["status"] == "approved"]
    waited = [o for o in outcomes if not isinstance(o, HubError) and o["status"] == "pending"]
    late = [o for o in outcomes if isinstance(o, HubError)]
    assert (len(ran), len(waited), len(late)) == (1, 1, APPROVERS - 2), outcomes
    assert {o.code for o in late} == {"approval_decided"}
    assert ran[0]["result"]["recipients"] == 2
    assert delivered(text) == 2


@pytest.mark.parametrize("round_", ROUNDS)
def test_a_winning_rejection_means_the_call_never_runs(held, approvers, round_):
    text = f"drop the table, round {round_}"
    approval_id = held(text)
    decide_approval(actor=approvers[0], approval_id=approval_id, decision="approve")
    decisions = ["reject", "approve", "approve", "reject"]

    outcomes = race(
        *(
            lambda a=a, d=d: decide_approval(actor=a, approval_id=approval_id, decision=d)
            for a, d in zip(approvers[1:], decisions, strict=False)
        )
    )

    final = [o["status"] for o in outcomes if not isinstance(o, HubError)]
    assert len(final) == 1 and final[0] in ("approved", "rejected"), outcomes
    assert delivered(text) == (2 if final[0] == "approved" else 0)
