"""Recurring schedules through their services: who may change them, what they check, when they
fire (cron in a time zone across DST, intervals), missed runs after a stop, overlapping runs, and
each due time firing once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hub_agents.models import AuditEntry
from hub_core.errors import HubError
from hub_schedules.models import Missed, Overlap, Schedule, ScheduleRun
from hub_schedules.selectors import schedule_list
from hub_schedules.services import (
    schedule_create,
    schedule_delete,
    schedule_pause,
    schedule_resume,
    schedule_run_now,
    schedules_fire_due,
)
from hub_tasks.models import POOL, Task, TaskStatus
from hub_tasks.services import task_cancel

pytestmark = pytest.mark.django_db

BERLIN_SPRING = datetime(2026, 3, 27, 12, 0, tzinfo=UTC)  # two days before 2026-03-29, 02:00 -> 03:00 local


def nightly(actor, **changes):
    arguments = {"name": "nightly", "alias": "reviewer", "task": "Review yesterday's merges.", "cron": "0 2 * * *"}
    return schedule_create(actor=actor, **(arguments | changes))


def sent(schedule: Schedule) -> list[Task]:
    return list(Task.objects.filter(schedule_runs__schedule=schedule).order_by("created_at"))


def fire_at(clock, moment: datetime) -> int:
    clock.move_to(moment)
    return schedules_fire_due()


# --- who may, and what is checked --------------------------------------------------------------


def test_owners_and_admins_create_members_and_viewers_are_refused(owner, agent, viewer, make_actor, network):
    admin = make_actor(network, "admin")
    assert nightly(owner).created_by == owner.label
    assert nightly(admin, name="hourly").network_id == network.pk
    for refused in (agent, viewer):
        with pytest.raises(HubError) as refusal:
            nightly(refused, name="nope")
        assert refusal.value.code == "permission_denied"
    assert AuditEntry.objects.filter(action="schedule.changed", detail__change="created").count() == 2


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": "every day"}, "cron"),
        ({"cron": None}, "cron"),  # neither cron nor interval
        ({"interval_seconds": 3600}, "cron"),  # both
        ({"time_zone": "Mars/Olympus"}, "time_zone"),
        ({"time_zone": "../etc/passwd"}, "time_zone"),
    ],
)
def test_a_bad_when_is_refused_naming_the_argument(owner, changes, field):
    with pytest.raises(HubError) as refusal:
        nightly(owner, **changes)
    assert refusal.value.code == "invalid_argument"
    assert f"`{field}`" in refusal.value.message
    assert not Schedule.objects.exists()


def test_the_target_is_an_alias_or_the_pool_by_skills(owner):
    with pytest.raises(HubError) as no_alias:
        nightly(owner, alias=None)
    assert no_alias.value.code == "invalid_argument"
    with pytest.raises(HubError) as not_pool:
        nightly(owner, required_skills=["python"])
    assert not_pool.value.code == "pool_alias_required"
    assert nightly(owner, alias=None, required_skills=["python"]).alias == POOL


def test_a_name_is_taken_once_per_network(owner):
    nightly(owner)
    with pytest.raises(HubError) as refusal:
        nightly(owner, cron="0 3 * * *")
    assert refusal.value.code == "schedule_name_taken"


def test_others_neither_see_nor_change_a_schedule(owner, outsider, viewer, agent):
    schedule = nightly(owner)
    assert schedule_list(actor=outsider) == []
    assert [row["name"] for row in schedule_list(actor=viewer)] == ["nightly"]
    for call in (schedule_pause, schedule_resume, schedule_run_now, schedule_delete):
        with pytest.raises(HubError) as hidden:
            call(actor=outsider, schedule_id=schedule.pk)
        assert hidden.value.code == "schedule_not_found"
        with pytest.raises(HubError) as refused:
            call(actor=agent, schedule_id=schedule.pk)
        assert refused.value.code == "permission_denied"


# --- when it fires ------------------------------------------------------------------------------


def test_a_berlin_schedule_fires_at_two_local_across_the_spring_change(clock, owner):
    clock.move_to(BERLIN_SPRING)
    schedule = nightly(owner, time_zone="Europe/Berlin", overlap=Overlap.QUEUE)
    moments = [datetime(2026, 3, 28, 1, 0, tzinfo=UTC), datetime(2026, 3, 29, 1, 0, tzinfo=UTC)]
    moments.append(datetime(2026, 3, 30, 0, 0, tzinfo=UTC))
    for moment in moments:
        assert fire_at(clock, moment - timedelta(seconds=1)) == 0  # not yet
        assert fire_at(clock, moment + timedelta(seconds=5)) == 1
    runs = ScheduleRun.objects.filter(schedule=schedule).order_by("due_at")
    # 02:00 CET; on the 29th 02:00 does not exist: 03:00 CEST, the first instant after the gap
    # (cronsim, as healthchecks.io); then 02:00 CEST.
    assert [run.due_at for run in runs] == moments
    assert [run.outcome for run in runs] == ["sent"] * 3
    assert [task.content for task in sent(schedule)] == ["Review yesterday's merges."] * 3


def test_two_thirty_on_the_spring_forward_day_fires_once_at_three(clock, owner):
    clock.move_to(BERLIN_SPRING)
    schedule = nightly(owner, cron="30 2 * * *", time_zone="Europe/Berlin", overlap=Overlap.QUEUE)
    for _ in range(3):
        assert fire_at(clock, Schedule.objects.get(pk=schedule.pk).next_run_at + timedelta(seconds=5)) == 1
    due = [run.due_at for run in ScheduleRun.objects.filter(schedule=schedule).order_by("due_at")]
    assert due == [
        datetime(2026, 3, 28, 1, 30, tzinfo=UTC),  # 02:30 CET
        datetime(2026, 3, 29, 1, 0, tzinfo=UTC),  # 03:00 CEST: 02:30 was skipped by the clock change
        datetime(2026, 3, 30, 0, 30, tzinfo=UTC),  # 02:30 CEST
    ]


def test_two_thirty_on_the_fall_back_day_fires_once_not_twice(clock, owner):
    clock.move_to(datetime(2026, 10, 24, 12, 0, tzinfo=UTC))  # the night of 2026-10-25 has 02:30 twice
    schedule = nightly(owner, cron="30 2 * * *", time_zone="Europe/Berlin", overlap=Overlap.QUEUE)
    first_0230 = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 02:30 CEST
    assert fire_at(clock, first_0230 + timedelta(seconds=5)) == 1
    assert fire_at(clock, first_0230 + timedelta(hours=1, seconds=5)) == 0  # 02:30 CET, the same local time
    assert fire_at(clock, datetime(2026, 10, 26, 1, 30, 5, tzinfo=UTC)) == 1  # the next day's 02:30 CET
    assert ScheduleRun.objects.filter(schedule=schedule).count() == 2


def test_an_interval_counts_from_creation(clock, owner):
    schedule = nightly(owner, cron=None, interval_seconds=600)
    created = schedule.created_at
    assert schedule.next_run_at == created + timedelta(seconds=600)
    assert fire_at(clock, created + timedelta(seconds=605)) == 1
    assert Schedule.objects.get(pk=schedule.pk).next_run_at == created + timedelta(seconds=1200)


def test_each_run_is_an_ordinary_task_sent_by_its_schedule(clock, owner, network):
    schedule = nightly(owner, cron="* * * * *", priority="high", ttl_seconds=120, context="repo: hub")
    fire_at(clock, schedule.next_run_at + timedelta(seconds=1))
    (task,) = sent(schedule)
    assert (task.network_id, task.to_name, task.priority, task.context) == (network.pk, "reviewer", "high", "repo: hub")
    assert task.status == TaskStatus.DELIVERED and task.ttl_seconds == 120
    assert schedule.pk in task.created_by


def test_a_pool_schedule_posts_an_open_task(clock, owner):
    schedule = nightly(owner, alias=None, required_skills=["python"], cron="* * * * *")
    fire_at(clock, schedule.next_run_at + timedelta(seconds=1))
    (task,) = sent(schedule)
    assert (task.to_name, task.required_skills, task.status) == (POOL, ["python"], TaskStatus.CREATED)


# --- a stop, and overlapping runs -----------------------------------------------------------------


@pytest.mark.parametrize(("missed", "tasks"), [(Missed.CATCH_UP_ONCE, 1), (Missed.SKIP, 0)])
def test_after_a_three_minute_stop_it_catches_up_once_or_skips(clock, owner, missed, tasks):
    schedule = nightly(owner, cron="* * * * *", missed=missed, overlap=Overlap.QUEUE)
    first = schedule.next_run_at
    assert fire_at(clock, first + timedelta(seconds=2)) == 1  # on time
    # The sweep stops for 3 minutes: three due times pass unswept.
    assert fire_at(clock, first + timedelta(minutes=3, seconds=30)) == tasks
    assert len(sent(schedule)) == 1 + tasks
    assert Schedule.objects.get(pk=schedule.pk).next_run_at == first + timedelta(minutes=4)
    last = ScheduleRun.objects.filter(schedule=schedule).order_by("-due_at").first()
    assert last.outcome == ("sent" if tasks else "missed")
    assert fire_at(clock, first + timedelta(minutes=3, seconds=40)) == 0  # nothing more until the next


def test_a_daily_run_found_late_is_missed_too(clock, owner):
    schedule = nightly(owner, missed=Missed.SKIP)
    assert fire_at(clock, schedule.next_run_at + timedelta(minutes=30)) == 0
    assert ScheduleRun.objects.get(schedule=schedule).outcome == "missed"


@pytest.mark.parametrize(("overlap", "tasks"), [(Overlap.SKIP, 1), (Overlap.QUEUE, 2)])
def test_a_run_still_open_skips_or_queues_the_next(clock, owner, overlap, tasks):
    schedule = nightly(owner, cron="* * * * *", overlap=overlap)
    first = schedule.next_run_at
    fire_at(clock, first + timedelta(seconds=1))
    fire_at(clock, first + timedelta(minutes=1, seconds=1))  # the first task is still delivered, open
    assert len(sent(schedule)) == tasks
    second = ScheduleRun.objects.filter(schedule=schedule).order_by("-due_at").first()
    assert second.outcome == ("skipped" if overlap == Overlap.SKIP else "sent")
    # The open one ended: the next due time sends again, whatever the rule.
    for task in sent(schedule):
        task_cancel(actor=owner, task_id=task.task_id)
    assert fire_at(clock, first + timedelta(minutes=2, seconds=1)) == 1


# --- pause, resume, run now, delete ----------------------------------------------------------


def test_paused_it_fires_nothing_and_resumed_it_does_not_catch_up(clock, owner):
    schedule = nightly(owner, cron="* * * * *")
    first = schedule.next_run_at
    schedule_pause(actor=owner, schedule_id=schedule.pk)
    assert fire_at(clock, first + timedelta(minutes=5)) == 0
    resumed = schedule_resume(actor=owner, schedule_id=schedule.pk)
    assert resumed.next_run_at == first + timedelta(minutes=6)  # the next minute after now
    assert fire_at(clock, resumed.next_run_at + timedelta(seconds=1)) == 1
    assert ScheduleRun.objects.filter(schedule=schedule).count() == 1
    changes = AuditEntry.objects.filter(action="schedule.changed").values_list("detail__change", flat=True)
    assert sorted(changes) == ["created", "paused", "resumed"]


def test_run_now_sends_at_once_even_paused_and_keeps_the_next_due_time(owner):
    schedule = nightly(owner, overlap=Overlap.SKIP)
    schedule_pause(actor=owner, schedule_id=schedule.pk)
    first = schedule_run_now(actor=owner, schedule_id=schedule.pk)
    second = schedule_run_now(actor=owner, schedule_id=schedule.pk)  # the first is open: run now sends anyway
    assert first.outcome == second.outcome == "sent" and first.task_id != second.task_id
    assert Task.objects.filter(pk__in=[first.task_id, second.task_id]).count() == 2
    assert Schedule.objects.get(pk=schedule.pk).next_run_at == schedule.next_run_at


def test_deleting_keeps_the_tasks_it_sent(owner):
    schedule = nightly(owner)
    started = schedule_run_now(actor=owner, schedule_id=schedule.pk)
    schedule_delete(actor=owner, schedule_id=schedule.pk)
    assert not Schedule.objects.exists() and not ScheduleRun.objects.exists()
    assert Task.objects.filter(pk=started.task_id).exists()


def test_a_refused_send_is_a_failed_run_and_the_schedule_goes_on(clock, owner):
    schedule = nightly(owner, cron="* * * * *")
    Schedule.objects.filter(pk=schedule.pk).update(required_skills=["python"])  # skills, yet an alias
    first = schedule.next_run_at
    assert fire_at(clock, first + timedelta(seconds=1)) == 0
    run = ScheduleRun.objects.get(schedule=schedule)
    assert (run.outcome, run.task_id) == ("failed", None) and "pool" in run.reason
    assert Schedule.objects.get(pk=schedule.pk).next_run_at == first + timedelta(minutes=1)


# --- once ----------------------------------------------------------------------------------------


def test_a_sweep_that_dies_mid_run_leaves_the_due_time_to_the_next(clock, owner, monkeypatch):
    """A sweeper killed while firing (here: its send blows up) rolls back the run row and the moved
    next_run_at with it: the sweep after the restart fires that due time, once."""
    schedule = nightly(owner, cron="* * * * *")
    due = schedule.next_run_at
    clock.move_to(due + timedelta(seconds=1))

    def crash(**_: object) -> None:
        raise RuntimeError("the process died here")

    monkeypatch.setattr("hub_schedules.services.task_send", crash)
    with pytest.raises(RuntimeError):
        schedules_fire_due()
    assert not ScheduleRun.objects.exists() and Schedule.objects.get(pk=schedule.pk).next_run_at == due
    monkeypatch.undo()
    assert [schedules_fire_due(), schedules_fire_due()] == [1, 0]
    assert ScheduleRun.objects.get(schedule=schedule).due_at == due


def test_a_run_now_at_the_due_instant_and_the_due_run_are_one_run(clock, owner):
    schedule = nightly(owner, cron="* * * * *", overlap=Overlap.QUEUE)
    clock.move_to(schedule.next_run_at)  # to the microsecond
    started = schedule_run_now(actor=owner, schedule_id=schedule.pk)
    assert schedules_fire_due() == 0
    (run,) = ScheduleRun.objects.filter(schedule=schedule)
    assert run.task_id == started.task_id and run.run_now is True


def test_sweeping_twice_fires_a_due_time_once(clock, owner):
    schedule = nightly(owner, cron="* * * * *", overlap=Overlap.QUEUE)
    clock.move_to(schedule.next_run_at + timedelta(seconds=1))
    assert [schedules_fire_due(), schedules_fire_due()] == [1, 0]
    assert len(sent(schedule)) == 1
