"""Skills and the open pool through the tools: agents say what they can do (report_status skills,
max_concurrent), find_agents finds them, send_task to "pool" with required_skills posts an open
task that wakes the able agents, list_open_tasks shows what an agent could take, and claim_task
gives it to exactly one of them, within its max_concurrent.

Races on row locks across processes: tests/hub_live/test_pool_claims.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from hub_events.models import OPERATORS, Event
from tests.helpers import refused
from tests.helpers.calls import (
    cancel_task,
    claim_task,
    find_agents,
    get_inbox,
    get_task,
    list_open_tasks,
    reassign_task,
    report_completion,
    report_status,
    retry_task,
    send_ack,
    send_reply,
    send_task,
)

pytestmark = pytest.mark.usefixtures("clock")
LEAD = "lead"


def report(agent, alias: str, *skills: str, **extra: Any) -> None:
    report_status(actor=agent, resume_id=f"r-{alias}", alias=alias, status="idle", skills=list(skills), **extra)


def post(agent, task: str, *skills: str, **extra: Any) -> dict[str, Any]:
    return send_task(actor=agent, alias="pool", task=task, from_session=LEAD, required_skills=list(skills), **extra)


def open_ids(agent, **filters: Any) -> list[str]:
    return [row["task_id"] for row in list_open_tasks(actor=agent, **filters)["tasks"]]


@pytest.fixture
def fleet(agent) -> None:
    report(agent, "py", "python")
    report(agent, "pyrev", "python", "review", max_concurrent=1)
    report(agent, "go", "go")


def test_skills_are_reported_kept_and_found_least_loaded_first(agent, fleet, clock):
    send_task(actor=agent, alias="py", task="already busy", from_session=LEAD)
    send_ack(actor=agent, task_id=send_task(actor=agent, alias="py", task="busy", from_session=LEAD)["task_id"])
    report_status(actor=agent, resume_id="r-go", alias="go", status="working")  # skills left out: kept

    found = find_agents(actor=agent, skill="python")["agents"]

    assert [(a["alias"], a["skills"], a["load"], a["max_concurrent"]) for a in found] == [
        ("pyrev", ["python", "review"], 0, 1),
        ("py", ["python"], 1, None),
    ]
    assert find_agents(actor=agent, skill="go")["agents"][0]["skills"] == ["go"]
    assert [a["alias"] for a in find_agents(actor=agent, status="working")["agents"]] == ["go"]
    report(agent, "go")  # []: none
    assert find_agents(actor=agent, skill="go")["agents"] == []


@pytest.mark.parametrize(
    ("skills", "wording"),
    [(["Python"], "lower-case tag"), (["python", "python"], "twice"), (["a b"], "lower-case tag"), ([""], "")],
)
def test_skills_are_checked(agent, skills, wording):
    error = refused(report_status, actor=agent, resume_id="r", alias="x", status="idle", skills=skills)
    assert error.code == "invalid_argument" and wording in error.message


def test_an_open_task_waits_in_no_inbox_and_wakes_only_the_able(agent, fleet):
    sent = post(agent, "review the parser", "python", "review")

    assert "warning" not in sent and sent["message_id"] == sent["task_id"]
    task = get_task(actor=agent, task_id=sent["task_id"])["task"]
    assert (task["status"], task["to_name"], task["required_skills"]) == ("created", "pool", ["python", "review"])
    assert all(get_inbox(actor=agent, alias=alias)["messages"] == [] for alias in ("py", "pyrev", "go", "pool"))
    woken = Event.objects.filter(type="new_open_task", payload__task_id=sent["task_id"]).exclude(audience=OPERATORS)
    assert list(woken.values_list("audience", flat=True)) == ["pyrev"]
    assert open_ids(agent, alias="pyrev") == [sent["task_id"]]
    assert open_ids(agent, alias="py") == []  # it lacks review
    assert open_ids(agent, skill="review") == [sent["task_id"]]


def test_nobody_able_is_a_warning_not_a_refusal(agent, fleet):
    sent = post(agent, "port to rust", "rust")
    assert "rust" in sent["warning"]


def test_the_pool_lists_by_priority_then_age(agent, fleet, clock):
    low = post(agent, "low", "python", priority="low")["task_id"]
    clock.tick(1)
    first_normal = post(agent, "normal 1", "python")["task_id"]
    clock.tick(1)
    high = post(agent, "high", "python", priority="high")["task_id"]
    clock.tick(1)
    second_normal = post(agent, "normal 2", "python")["task_id"]

    assert open_ids(agent, alias="py") == [high, first_normal, second_normal, low]
    assert open_ids(agent, alias="py", limit=2) == [high, first_normal]


def test_a_claim_makes_it_the_claimers_acked_task_and_the_next_claimer_is_told_who(agent, fleet):
    task_id = post(agent, "write tests", "python", lease_seconds=60)["task_id"]

    claimed = claim_task(actor=agent, task_id=task_id, alias="py")

    assert (claimed["claimed_by"], claimed["lease_expires_at"]) == ("py", "2026-04-12T10:01:00.000Z")
    found = get_task(actor=agent, task_id=task_id)
    assert (found["task"]["status"], found["task"]["to_name"]) == ("acked", "py")
    assert found["task"]["first_read_at"] is not None
    assert [(a["number"], a["alias"]) for a in found["attempts"]] == [(1, "py")]
    assert [e["to_status"] for e in found["events"]] == ["created", "acked"]
    assert open_ids(agent) == []
    late = refused(claim_task, actor=agent, task_id=task_id, alias="pyrev")
    assert (late.code, late.extra["claimed_by"]) == ("task_claimed", "py")
    # From here an ordinary task: its claimer completes it.
    report_completion(actor=agent, alias="py", task=task_id, result="done")
    assert get_task(actor=agent, task_id=task_id)["task"]["status"] == "replied"


def test_a_claim_needs_the_skills_a_session_and_room_under_max_concurrent(agent, fleet):
    first, second = (post(agent, name, "python")["task_id"] for name in ("one", "two"))
    review = post(agent, "review", "review")["task_id"]

    assert refused(claim_task, actor=agent, task_id=review, alias="py").code == "skills_missing"
    assert refused(claim_task, actor=agent, task_id=first, alias="stranger").code == "session_required"
    claim_task(actor=agent, task_id=first, alias="pyrev")
    assert refused(claim_task, actor=agent, task_id=second, alias="pyrev").code == "at_capacity"
    report_completion(actor=agent, alias="pyrev", task=first, result="done")
    assert claim_task(actor=agent, task_id=second, alias="pyrev")["claimed_by"] == "pyrev"


def test_an_ordinary_task_is_not_claimable_and_an_open_one_not_ackable(agent, fleet):
    ordinary = send_task(actor=agent, alias="py", task="direct", from_session=LEAD)["task_id"]
    open_one = post(agent, "open", "python")["task_id"]

    assert refused(claim_task, actor=agent, task_id=ordinary, alias="py").code == "task_not_open"
    assert refused(send_ack, actor=agent, task_id=open_one).code == "task_open"
    assert refused(claim_task, actor=agent, task_id="nope", alias="py").code == "task_not_found"


def test_open_tasks_expire_by_ttl_are_cancelled_retried_back_to_the_pool_or_reassigned(agent, fleet, clock):
    expiring = post(agent, "soon stale", "python", ttl_seconds=30)["task_id"]
    clock.tick(1)
    cancelled = post(agent, "not needed", "python")["task_id"]
    handed = post(agent, "for go", "python", priority="low")["task_id"]
    clock.tick(29)

    assert get_task(actor=agent, task_id=expiring)["task"]["status"] == "expired"
    cancel_task(actor=agent, task_id=cancelled)
    assert open_ids(agent) == [handed]
    retry_task(actor=agent, task_id=expiring)
    assert open_ids(agent) == [expiring, handed]  # its age counts from its first posting
    reassign_task(actor=agent, task_id=handed, new_alias="go")  # an operator's choice: no skills asked
    assert [m["task_id"] for m in get_inbox(actor=agent, alias="go")["messages"]] == [handed]
    assert open_ids(agent) == [expiring]


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        ({"alias": "py"}, "pool_alias_required"),
        ({"not_before_seconds": 60}, "open_task_held"),
    ],
)
def test_conflicting_open_task_arguments_are_refused(agent, fleet, extra, code):
    arguments = {"alias": "pool", "task": "t", "required_skills": ["python"], **extra}
    assert refused(send_task, actor=agent, **arguments).code == code


def test_a_pool_alias_without_required_skills_is_an_ordinary_task(agent):
    sent = send_task(actor=agent, alias="pool", task="to the agent named pool")
    assert get_task(actor=agent, task_id=sent["task_id"])["task"]["status"] == "delivered"


def test_another_network_sees_no_open_task_and_cannot_claim_it(agent, outsider, fleet):
    task_id = post(agent, "private", "python")["task_id"]
    report_status(actor=outsider, resume_id="r-x", alias="py", status="idle", skills=["python"])

    assert open_ids(outsider) == []
    assert refused(claim_task, actor=outsider, task_id=task_id, alias="py").code == "task_not_found"
    assert (
        find_agents(actor=outsider, skill="python")["agents"][0]["network_id"]
        != get_task(actor=agent, task_id=task_id)["task"]["network_id"]
    )


def test_a_viewers_claim_is_refused_and_renews_no_lease_of_the_claimer(agent, viewer, fleet, clock):
    """A viewer's claim_task in the claimer's name writes nothing: not the claim, and not the lease
    renewal an agent's own calls bring (the open task's claimer holds a leased task)."""
    held = post(agent, "held", "python", lease_seconds=60)["task_id"]
    claim_task(actor=agent, task_id=held, alias="py")
    open_one = post(agent, "open", "python")["task_id"]
    clock.tick(30)

    assert refused(claim_task, actor=viewer, task_id=open_one, alias="py").code == "permission_denied"

    assert get_task(actor=agent, task_id=held)["task"]["lease_expires_at"] == "2026-04-12T10:01:00.000Z"
    assert get_task(actor=agent, task_id=open_one)["task"]["status"] == "created"
    claim_task(actor=agent, task_id=open_one, alias="py")  # the agent's own claim renews it
    assert get_task(actor=agent, task_id=held)["task"]["lease_expires_at"] == "2026-04-12T10:01:30.000Z"


def test_a_claimed_task_whose_agent_goes_silent_goes_back_to_the_pool(agent, fleet, clock):
    task_id = post(agent, "long job", "python", lease_seconds=60)["task_id"]
    claim_task(actor=agent, task_id=task_id, alias="py")

    clock.tick(60)  # py went silent past its lease

    assert open_ids(agent) == [task_id]
    found = get_task(actor=agent, task_id=task_id)
    assert (found["task"]["status"], found["task"]["to_name"]) == ("created", "pool")
    assert [(a["alias"], a["outcome"]) for a in found["attempts"]] == [("py", "lost")]
    lost = Event.objects.filter(type="lease_lost", payload__task_id=task_id, audience=OPERATORS).get()
    assert lost.payload["outcome"] == "reopened"
    reopened = Event.objects.filter(type="new_open_task", payload__task_id=task_id).exclude(audience=OPERATORS)
    assert sorted(reopened.values_list("audience", flat=True)) == ["py", "py", "pyrev", "pyrev"]  # posted, reopened
    assert claim_task(actor=agent, task_id=task_id, alias="pyrev")["claimed_by"] == "pyrev"
    assert [a["alias"] for a in get_task(actor=agent, task_id=task_id)["attempts"]] == ["py", "pyrev"]


def test_an_offline_agent_and_the_pool_itself_cannot_claim(agent, fleet, clock, settings):
    task_id = post(agent, "anyone", "python")["task_id"]
    clock.tick(settings.COMMHUB_OFFLINE_AFTER_SECONDS + 1)  # every heartbeat of the fleet is stale
    assert refused(claim_task, actor=agent, task_id=task_id, alias="py").code == "agent_offline"
    report(agent, "pool", "python")
    assert refused(claim_task, actor=agent, task_id=task_id, alias="pool").code == "session_required"


def test_a_reply_cannot_end_an_open_task_behind_the_pool(agent, fleet):
    task_id = post(agent, "unclaimed", "python")["task_id"]
    error = refused(send_reply, actor=agent, alias=LEAD, text="done", in_reply_to=task_id, from_session="py")
    assert error.code == "task_open"
    assert get_task(actor=agent, task_id=task_id)["task"]["status"] == "created"
