"""Concurrency caps through the tools: cap_set holds the network's runs of a scope to a limit, the
work beyond it waits (list_tasks blocked) and is delivered by priority then age as runs end; cap_list
shows the slots used, cap_delete frees the waiters; owners and admins only, audited.

Concurrent releases on real connections: tests/hub_fleet/test_cap_races.py.
"""

from __future__ import annotations

import pytest

from hub_agents.models import AuditEntry
from tests.helpers import refused
from tests.helpers.calls import (
    cancel_task,
    cap_delete,
    cap_list,
    cap_set,
    claim_task,
    get_task,
    list_tasks,
    reassign_task,
    report_completion,
    report_node,
    report_status,
    retry_task,
    send_task,
    send_task_id,
)
from tests.helpers.tasks import reply

pytestmark = pytest.mark.usefixtures("clock")
WITH_AGENT = {"delivered", "acked", "running"}
PRIORITIES = ["low", "normal", "high", "low", "high", "normal", "low", "high", "normal", "low"]
RANK = {"high": 0, "normal": 1, "low": 2}


def with_agent(actor, ids: list[str]) -> list[str]:
    return [task_id for task_id in ids if get_task(actor=actor, task_id=task_id)["task"]["status"] in WITH_AGENT]


def blocked(actor) -> set[str]:
    return {row["task_id"] for row in list_tasks(actor=actor, blocked=True, limit=100)["tasks"]}


def test_a_cap_of_two_runs_ten_tasks_two_at_a_time_by_priority_then_age(owner, agent, clock):
    cap_set(actor=owner, scope="all", limit=2)
    ids = []
    for n, priority in enumerate(PRIORITIES):
        ids.append(send_task_id(agent, f"job {n}", priority=priority))
        clock.tick(1)
    assert with_agent(agent, ids) == ids[:2]
    assert blocked(agent) == set(ids[2:])

    started: list[str] = []
    while current := with_agent(agent, ids):
        assert len(current) <= 2
        started += [task_id for task_id in current if task_id not in started]
        report_status(actor=agent, resume_id="r-coder", alias="coder", status="working", task=current[0])
        reply(agent, current[0])

    waited = sorted(range(2, 10), key=lambda n: (RANK[PRIORITIES[n]], n))
    assert started == ids[:2] + [ids[n] for n in waited]
    assert all(get_task(actor=agent, task_id=task_id)["task"]["status"] == "replied" for task_id in ids)
    assert cap_list(actor=agent)["caps"][0]["used"] == 0


def test_a_raised_cap_releases_at_once_and_a_deleted_one_releases_all(owner, agent, clock):
    cap = cap_set(actor=owner, scope="all", limit=1)["cap"]
    ids = []
    for n in range(4):
        ids.append(send_task_id(agent, f"job {n}"))
        clock.tick(1)
    assert with_agent(agent, ids) == ids[:1]
    assert {get_task(actor=agent, task_id=task_id)["task"]["waiting_cap"] for task_id in ids} == {None, cap["cap_id"]}
    assert [(row["used"], row["waiting"]) for row in cap_list(actor=agent)["caps"]] == [(1, 3)]
    assert cap_set(actor=owner, scope="all", limit=2)["cap"] == {
        **cap,
        "limit": 2,
        "used": 2,
        "waiting": 2,
        "updated_at": "2026-04-12T10:00:04.000Z",
    }
    assert with_agent(agent, ids) == ids[:2]
    cap_delete(actor=owner, cap_id=cap["cap_id"])
    assert with_agent(agent, ids) == ids
    assert get_task(actor=agent, task_id=ids[-1])["task"]["waiting_cap"] is None
    assert cap_list(actor=agent)["caps"] == []
    changes = AuditEntry.objects.filter(action=AuditEntry.Action.CAP_CHANGED).order_by("pk")
    assert [entry.detail["change"] for entry in changes] == ["created", "changed", "deleted"]


def test_a_waiting_task_cancelled_frees_no_slot_and_is_never_delivered(owner, agent):
    cap_set(actor=owner, scope="all", limit=1)
    first, waiting, last = (send_task_id(agent, f"job {n}") for n in range(3))
    cancel_task(actor=agent, task_id=waiting)
    reply(agent, first)
    assert with_agent(agent, [first, waiting, last]) == [last]


def test_a_skill_cap_counts_only_tasks_needing_it_and_refuses_a_claim_beyond_it(owner, agent):
    cap_set(actor=owner, scope="skill", value="gpu", limit=1)
    for alias in ("a", "b"):
        report_status(actor=agent, resume_id=f"r-{alias}", alias=alias, status="idle", skills=["gpu"])
    one, two = (send_task(actor=agent, alias="pool", task=f"t{n}", required_skills=["gpu"])["task_id"] for n in "12")
    claim_task(actor=agent, task_id=one, alias="a")
    error = refused(claim_task, actor=agent, task_id=two, alias="b")
    assert (error.code, error.status) == ("cap_full", 409)
    plain = send_task_id(agent, "no gpu needed")
    assert with_agent(agent, [plain]) == [plain]
    report_completion(actor=agent, alias="a", task=one, result="done")
    claim_task(actor=agent, task_id=two, alias="b")


def test_a_runtime_cap_counts_the_runtime_the_agents_node_reports(owner, agent):
    cap_set(actor=owner, scope="runtime", value="codex", limit=1)
    report_node(
        actor=agent,
        node_id="n1",
        agents=[
            {"alias": "cx", "runtime": "codex", "concurrency": 2, "running": 0},
            {"alias": "cc", "runtime": "claude", "concurrency": 2, "running": 0},
        ],
    )
    for alias in ("cx", "cc"):
        report_status(actor=agent, resume_id=f"r-{alias}", alias=alias, status="idle", node_id="n1")
    codex = [send_task_id(agent, f"c{n}", alias="cx") for n in range(2)]
    claude = [send_task_id(agent, f"k{n}", alias="cc") for n in range(2)]
    assert with_agent(agent, codex + claude) == [codex[0], *claude]


@pytest.mark.parametrize(
    ("arguments", "field"), [({"scope": "all", "value": "x"}, "value"), ({"scope": "skill"}, "value")]
)
def test_a_cap_names_its_value_for_a_runtime_or_skill_only(owner, arguments, field):
    error = refused(cap_set, actor=owner, limit=1, **arguments)
    assert (error.code, error.extra["field"]) == ("invalid_argument", field)


def test_only_owners_and_admins_change_caps_members_and_viewers_read_them(owner, agent, viewer):
    cap = cap_set(actor=owner, scope="all", limit=3)["cap"]
    for actor in (agent, viewer):
        assert refused(cap_set, actor=actor, scope="all", limit=9).status == 403
        assert refused(cap_delete, actor=actor, cap_id=cap["cap_id"]).status == 403
        assert [row["limit"] for row in cap_list(actor=actor)["caps"]] == [3]


def test_another_networks_cap_is_not_found(owner, outsider):
    cap = cap_set(actor=owner, scope="all", limit=3)["cap"]
    assert refused(cap_delete, actor=outsider, cap_id=cap["cap_id"]).code == "cap_not_found"
    assert cap_list(actor=outsider)["caps"] == []


def test_a_retry_or_a_reassign_waits_for_a_full_cap_like_a_send(owner, agent, clock):
    cap_set(actor=owner, scope="all", limit=1)
    first = send_task_id(agent, "first")
    failed = send_task_id(agent, "second")
    cancel_task(actor=agent, task_id=failed)
    retry_task(actor=agent, task_id=failed)
    assert blocked(agent) == {failed}
    clock.tick(1)
    waiting = send_task_id(agent, "third")
    reassign_task(actor=agent, task_id=waiting, new_alias="helper")
    assert blocked(agent) == {failed, waiting}

    reply(agent, first)
    assert with_agent(agent, [first, failed, waiting]) == [failed]
    reply(agent, failed)
    assert with_agent(agent, [waiting]) == [waiting]
    assert get_task(actor=agent, task_id=waiting)["task"]["to_name"] == "helper"
