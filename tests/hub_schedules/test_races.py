"""Sweepers racing on real threads (row locks for real on PostgreSQL; serialised writes on SQLite):
each due time of a schedule fires once, whatever number of sweeps find it due at once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from hub_schedules.models import Overlap, Schedule, ScheduleRun
from hub_schedules.services import schedule_create, schedules_fire_due
from hub_tasks.models import Task
from tests.helpers.races import race

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.race]
ROUNDS = range(5)
SWEEPERS = 4


def test_racing_sweeps_fire_each_due_time_once(owner):
    schedule = schedule_create(
        actor=owner, name="minutely", alias="worker", task="tick", cron="* * * * *", overlap=Overlap.QUEUE
    )
    start = timezone.now().replace(second=0, microsecond=0) - timedelta(hours=1)
    for round_ in ROUNDS:
        # Due again (a due time of its own each round), found by every sweeper at once.
        Schedule.objects.filter(pk=schedule.pk).update(next_run_at=start + timedelta(minutes=round_))
        sent = race(*[schedules_fire_due for _ in range(SWEEPERS)])
        assert sorted(sent) == [0] * (SWEEPERS - 1) + [1]
    assert ScheduleRun.objects.filter(schedule=schedule).count() == len(ROUNDS)
    assert Task.objects.filter(schedule_runs__schedule=schedule).count() == len(ROUNDS)
