"""Deadlines and heartbeats under a moved clock: many tasks, many readers, one outcome each.

test_expiry.py follows one task; here many tasks with staggered deadlines are read through every
surface while the clock moves in steps, and concurrent readers look at the same frozen instant.
Each overdue task must expire exactly once, and its sender hear of it exactly once. Sessions go
offline once their last heartbeat is older than COMMHUB_OFFLINE_AFTER_SECONDS, and come back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from freezegun.api import FrozenDateTimeFactory

from hub_agents.actors import Actor
from hub_agents.models import Network
from hub_core.errors import HubError
from hub_core.formats import timestamp
from hub_events.models import OPERATORS, Event
from hub_fleet.selectors import fleet
from hub_tasks.models import InboxMessage, Task, TaskEvent
from tests.helpers.calls import (
    ack_inbox,
    broadcast,
    cancel_task,
    get_all_status,
    get_inbox,
    get_session_status,
    get_task,
    list_tasks,
    reassign_task,
    report_completion,
    report_status,
    retry_task,
    send_ack,
    send_task,
)
from tests.helpers.races import race

pytestmark = pytest.mark.usefixtures("clock")

SENDERS = ("lead-0", "lead-1", "lead-2")
RECEIVERS = ("coder", "tester")
STEP = 60
# Staggered deadlines: some on a step (expire at that step), some a second past one (the next).
TTLS = (30, 60, 61, 90, 120, 121, 150, 179, 180, 240, 300, 301, 3600)


@dataclass(frozen=True)
class Sent:
    task_id: str
    sender: str
    receiver: str
    ttl: int


def send_staggered(actor: Actor, ttls: tuple[int, ...] = TTLS) -> list[Sent]:
    """One task per TTL, all at the same instant, from three senders to two receivers."""
    sent = []
    for i, ttl in enumerate(ttls):
        sender, receiver = SENDERS[i % len(SENDERS)], RECEIVERS[i % len(RECEIVERS)]
        answer = send_task(actor=actor, alias=receiver, task=f"job {i}", from_session=sender, ttl_seconds=ttl)
        sent.append(Sent(answer["task_id"], sender, receiver, ttl))
    return sent


def stored_statuses(sent: list[Sent]) -> dict[str, str]:
    """What the rows say, read without any sweep (selectors would settle deadlines first)."""
    return dict(Task.objects.filter(pk__in=[s.task_id for s in sent]).values_list("task_id", "status"))


def expired_rows(sent: list[Sent]) -> Counter[str]:
    """Expired TaskEvent rows per task."""
    events = TaskEvent.objects.filter(task_id__in=[s.task_id for s in sent], to_status="expired")
    return Counter(events.values_list("task_id", flat=True))


def notices_by_sender(sent: list[Sent]) -> Counter[tuple[str, str]]:
    """The hub's expiry notices, by (sender they went to, task), read straight from the table."""
    rows = InboxMessage.objects.filter(type="notice", task_id__in=[s.task_id for s in sent])
    assert set(rows.values_list("from_session", flat=True)) <= {"hub"}
    return Counter(rows.values_list("to_alias", "task_id"))


def expired_pushes(sent: list[Sent]) -> Counter[tuple[str, str]]:
    """task_expired events in the log, by (audience, task)."""
    rows = Event.objects.filter(type="task_expired", payload__task_id__in=[s.task_id for s in sent])
    return Counter((audience, payload["task_id"]) for audience, payload in rows.values_list("audience", "payload"))


def assert_expired_exactly_once(sent: list[Sent], overdue: list[Sent]) -> None:
    """Every overdue task expired once, its sender told once (inbox and push); nothing else expired."""
    assert expired_rows(sent) == Counter({s.task_id: 1 for s in overdue})
    assert notices_by_sender(sent) == Counter({(s.sender, s.task_id): 1 for s in overdue})
    expected_pushes = Counter({(audience, s.task_id): 1 for s in overdue for audience in (OPERATORS, s.sender)})
    assert expired_pushes(sent) == expected_pushes


def pending_tasks(sent: list[Sent], alias: str, elapsed: int) -> set[str]:
    return {s.task_id for s in sent if s.receiver == alias and s.ttl > elapsed}


# Each surface looks at the tasks as a caller would and checks its own answer; all of them must
# settle overdue deadlines before answering.
Surface = Callable[[Actor, list[Sent], int], None]


def via_get_inbox(actor: Actor, sent: list[Sent], elapsed: int) -> None:
    messages = get_inbox(actor=actor, alias="coder", limit=100)["messages"]
    assert {m["id"] for m in messages} == pending_tasks(sent, "coder", elapsed)


def via_list_tasks(actor: Actor, sent: list[Sent], elapsed: int) -> None:
    rows = {row["task_id"]: row["status"] for row in list_tasks(actor=actor, limit=100)["tasks"]}
    assert rows == {s.task_id: "expired" if s.ttl <= elapsed else "delivered" for s in sent}


def via_get_task(actor: Actor, sent: list[Sent], elapsed: int) -> None:
    # Reading one task settles every overdue deadline in scope, not just its own.
    latest = max(sent, key=lambda s: s.ttl)
    assert get_task(actor=actor, task_id=latest.task_id)["task"]["status"] == "delivered"


def via_report_status(actor: Actor, sent: list[Sent], elapsed: int) -> None:
    answer = report_status(actor=actor, resume_id="tester-1", alias="tester", status="idle")
    assert answer["inbox_count"] == len(pending_tasks(sent, "tester", elapsed))


def via_get_session_status(actor: Actor, sent: list[Sent], elapsed: int) -> None:
    assert get_session_status(actor=actor, alias="coder")["inbox_pending"] == len(pending_tasks(sent, "coder", elapsed))


SURFACES: dict[str, Surface] = {
    "get_inbox": via_get_inbox,
    "list_tasks": via_list_tasks,
    "get_task": via_get_task,
    "report_status": via_report_status,
    "get_session_status": via_get_session_status,
}


@pytest.mark.parametrize("first", range(len(SURFACES)), ids=list(SURFACES))
def test_staggered_deadlines_expire_exactly_once_whichever_surface_looks(agent, clock, first):
    sent = send_staggered(agent)
    surfaces = list(SURFACES.values())

    for step in range(7):  # 0 .. 360 s: every deadline but the hour-long one passes
        if step:
            clock.tick(STEP)
        elapsed = step * STEP
        overdue = [s for s in sent if s.ttl <= elapsed]
        # Expiry is lazy: until someone looks, the tasks that just became overdue still read delivered...
        assert stored_statuses(sent) == {s.task_id: "expired" if s.ttl <= elapsed - STEP else "delivered" for s in sent}

        surfaces[(first + step) % len(surfaces)](agent, sent, elapsed)

        # ...and whichever surface looked settled every overdue deadline, each once.
        assert stored_statuses(sent) == {s.task_id: "expired" if s.ttl <= elapsed else "delivered" for s in sent}
        assert_expired_exactly_once(sent, overdue)

    for surface in surfaces * 2:  # everyone looks again, twice: nothing expires a second time
        surface(agent, sent, elapsed)
    assert_expired_exactly_once(sent, overdue)
    for sender in SENDERS:
        notices = [m for m in get_inbox(actor=agent, alias=sender, limit=100)["messages"] if m["type"] == "notice"]
        assert sorted(m["task_id"] for m in notices) == sorted(s.task_id for s in overdue if s.sender == sender)


@pytest.mark.parametrize("ttl", [STEP - 1, STEP, STEP + 1])
def test_a_deadline_is_inclusive_to_the_second(agent, clock, ttl):
    (sent,) = send_staggered(agent, ttls=(ttl,))
    clock.tick(STEP)

    list_tasks(actor=agent)

    assert stored_statuses([sent])[sent.task_id] == ("expired" if ttl <= STEP else "delivered")


# --- at the same frozen instant, from many threads --------------------------------------------------


def concurrent_lookers(agent: Actor, sent: list[Sent]) -> list[Callable[[], Any]]:
    """Readers on every surface, and writers that must first settle the deadline of what they touch."""
    lookers: list[Callable[[], Any]] = []
    for alias in (*RECEIVERS, *SENDERS):
        lookers.append(lambda alias=alias: get_inbox(actor=agent, alias=alias, limit=100))
        lookers.append(lambda alias=alias: get_session_status(actor=agent, alias=alias))
    for alias in RECEIVERS * 2:
        lookers.append(
            lambda alias=alias: report_status(actor=agent, resume_id=f"resume-{alias}", alias=alias, status="idle")
        )
    for s in sent:
        lookers.append(lambda s=s: get_task(actor=agent, task_id=s.task_id))
        lookers.append(lambda: list_tasks(actor=agent, limit=100))
    first, second, third = sent[:3]
    lookers += [
        lambda: cancel_task(actor=agent, task_id=first.task_id),
        lambda: send_ack(actor=agent, task_id=second.task_id),
        lambda: report_completion(actor=agent, alias=third.receiver, task=third.task_id, result="late"),
    ]
    return lookers


@pytest.mark.race
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("round_", range(3))
def test_concurrent_readers_at_one_frozen_instant_expire_each_task_once(agent, clock, round_):
    sent = send_staggered(agent, ttls=(60,) * 9)
    clock.tick(61)
    lookers = concurrent_lookers(agent, sent)
    assert len(lookers) <= 45  # one connection each: PostgreSQL allows 100

    outcomes = race(*lookers)

    refusals = [outcome for outcome in outcomes if isinstance(outcome, HubError)]
    assert [refusal.error for refusal in refusals] == ["task is terminal (expired)"] * 2  # cancel, send_ack
    assert "warning" in outcomes[-1]  # a late completion is recorded, the task stays expired
    assert set(stored_statuses(sent).values()) == {"expired"}
    assert_expired_exactly_once(sent, sent)


@pytest.mark.race
@pytest.mark.django_db(transaction=True)
def test_a_retry_racing_the_readers_expires_once_then_delivers_again(agent, clock):
    sent = send_staggered(agent, ttls=(60,) * 3)
    clock.tick(61)
    retried = sent[0]

    outcomes = race(
        lambda: retry_task(actor=agent, task_id=retried.task_id),
        *[lambda: list_tasks(actor=agent)] * 4,
        *[lambda s=s: get_task(actor=agent, task_id=s.task_id) for s in sent],
        *[lambda alias=alias: get_inbox(actor=agent, alias=alias) for alias in RECEIVERS],
    )

    assert outcomes[0]["retried_to"] == retried.receiver
    history = TaskEvent.objects.filter(task_id=retried.task_id).order_by("id").values_list("from_status", "to_status")
    assert list(history) == [("", "delivered"), ("delivered", "expired"), ("expired", "delivered")]
    assert stored_statuses(sent) == {s.task_id: "delivered" if s is retried else "expired" for s in sent}
    assert_expired_exactly_once(sent, sent)


# --- a taken task handed on after its deadline ------------------------------------------------------


def take(agent: Actor, online: Callable[..., dict], task_id: str, how: str) -> None:
    if how == "acked":
        ack_inbox(actor=agent, alias="coder", message_id=task_id)
    else:
        online("coder", status="working", task=task_id)


@pytest.mark.parametrize("taken", ["acked", "running"])
def test_a_task_reassigned_past_its_deadline_expires_at_the_next_look_and_only_once(agent, online, clock, taken):
    """reassign_task keeps expires_at (the contract: the new alias gets what is left of the TTL), so a
    task taken in time but handed on after its deadline is overdue the moment it is delivered again."""
    task_id = send_task(actor=agent, alias="coder", task="t", from_session="lead", ttl_seconds=STEP)["task_id"]
    clock.tick(10)
    take(agent, online, task_id, taken)
    clock.tick(2 * STEP)  # a taken task never expires, however late
    assert get_task(actor=agent, task_id=task_id)["task"]["status"] == taken

    assert reassign_task(actor=agent, task_id=task_id, new_alias="reviewer")["ok"] is True
    assert get_inbox(actor=agent, alias="reviewer")["messages"] == []  # the next look expires it
    for _ in range(2):
        list_tasks(actor=agent)
        get_session_status(actor=agent, alias="reviewer")

    history = list(TaskEvent.objects.filter(task_id=task_id).order_by("id").values_list("from_status", "to_status"))
    assert history[-2:] == [(taken, "delivered"), ("delivered", "expired")]
    sent = [Sent(task_id, "lead", "reviewer", STEP)]
    assert_expired_exactly_once(sent, sent)


def test_the_notice_of_a_task_reassigned_past_its_deadline_names_that_deadline(agent, clock):
    task_id = send_task(actor=agent, alias="coder", task="t", from_session="lead", ttl_seconds=STEP)["task_id"]
    ack_inbox(actor=agent, alias="coder", message_id=task_id)
    clock.tick(2 * STEP)
    reassign_task(actor=agent, task_id=task_id, new_alias="reviewer")

    (notice,) = [m for m in get_inbox(actor=agent, alias="lead")["messages"] if m["type"] == "notice"]
    (expired,) = TaskEvent.objects.filter(task_id=task_id, to_status="expired")
    deadline = Task.objects.get(pk=task_id).expires_at
    for text in (notice["content"], expired.detail):
        assert f"deadline {timestamp(deadline)}" in text


# --- sessions: offline after a silence, online again with a heartbeat -------------------------------


def statuses_everywhere(actor: Actor, network: Network, alias: str) -> set[str]:
    """The alias's status in get_all_status, get_session_status and the dashboard's fleet."""
    listed = {row["alias"]: row["status"] for row in get_all_status(actor=actor)["sessions"]}
    single = get_session_status(actor=actor, alias=alias)["session"]["status"]
    shown = {row["alias"]: row["status"] for row in fleet(actor=actor, network_id=network.id)["sessions"]}
    return {listed[alias], single, shown[alias]}


def broadcast_reaches(actor: Actor) -> set[str]:
    sent = broadcast(actor=actor, message="roll call")
    return set(InboxMessage.objects.filter(pk__in=sent["message_ids"]).values_list("to_alias", flat=True))


@pytest.mark.parametrize("threshold", [None, 30], ids=["default-600s", "setting-30s"])
def test_a_silent_session_goes_offline_one_second_past_the_threshold_and_back_with_a_heartbeat(
    agent, network, online, clock: FrozenDateTimeFactory, settings, threshold
):
    if threshold is not None:
        settings.COMMHUB_OFFLINE_AFTER_SECONDS = threshold
    after = settings.COMMHUB_OFFLINE_AFTER_SECONDS
    online("coder", status="working")
    online("tester", status="idle")
    clock.tick(after // 2)
    online("writer", status="idle")

    clock.tick(after - after // 2)  # exactly the threshold since coder and tester last reported
    assert statuses_everywhere(agent, network, "coder") == {"working"}
    assert statuses_everywhere(agent, network, "tester") == {"idle"}
    assert broadcast_reaches(agent) == {"coder", "tester", "writer"}

    clock.tick(1)  # one second past it
    assert statuses_everywhere(agent, network, "coder") == {"offline"}
    assert statuses_everywhere(agent, network, "tester") == {"offline"}
    assert statuses_everywhere(agent, network, "writer") == {"idle"}
    summary = {row["status"]: row["count"] for row in get_all_status(actor=agent)["summary"]}
    assert summary == {"offline": 2, "idle": 1}
    assert {row["alias"] for row in get_all_status(actor=agent, filter_status="offline")["sessions"]} == {
        "coder",
        "tester",
    }
    # Problems first: offline with the broadcast above still waiting, ahead of the idle writer.
    assert [row["alias"] for row in fleet(actor=agent, network_id=network.id)["sessions"]] == [
        "coder",
        "tester",
        "writer",
    ]
    assert broadcast_reaches(agent) == {"writer"}
    assert broadcast(actor=agent, message="working?", filter_status="working")["recipients"] == 0

    online("coder", status="working")  # a new heartbeat
    assert statuses_everywhere(agent, network, "coder") == {"working"}
    assert statuses_everywhere(agent, network, "tester") == {"offline"}
    assert broadcast_reaches(agent) == {"coder", "writer"}
    # The broadcasts sent while coder was offline never reached its inbox; the new one did.
    assert InboxMessage.objects.filter(to_alias="coder", type="broadcast").count() == 2

    clock.tick(after + 1)  # the whole fleet falls silent
    assert broadcast(actor=agent, message="anyone?") == {"ok": True, "recipients": 0, "message_ids": []}
    assert settings.COMMHUB_OFFLINE_AFTER_SECONDS == (threshold or 600)
