"""The sweep fires schedules: `manage.py sweep --once` in process, and two `manage.py sweep`
processes side by side for five minutes of a sped-up clock (libfaketime), each minute once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.core.management import call_command

from hub_schedules.models import Overlap, ScheduleRun
from hub_schedules.services import schedule_create
from hub_tasks.models import Task
from tests.helpers import ROOT
from tests.helpers.live import database_url

MINUTELY = {"name": "minutely", "alias": "worker", "task": "tick", "cron": "* * * * *", "overlap": Overlap.QUEUE}


@pytest.mark.django_db
def test_the_sweep_command_fires_a_due_schedule(clock, owner):
    schedule = schedule_create(actor=owner, **MINUTELY)
    clock.move_to(schedule.next_run_at + timedelta(seconds=1))
    call_command("sweep", "--once")
    call_command("sweep", "--once")
    (run,) = ScheduleRun.objects.filter(schedule=schedule)
    assert run.outcome == "sent" and Task.objects.filter(pk=run.task_id, content="tick").exists()


SPEED = 30  # fake seconds per real second: five minutes in ten seconds, once the processes are up
MINUTES = 5
STARTING = 60  # real seconds the processes may take to start and sweep five minutes on a busy machine
LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"  # Debian's faketime package


@pytest.mark.slow  # two processes of their own: some 12 s
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not os.path.exists(LIBFAKETIME), reason="needs libfaketime (apt-get install faketime)")
def test_two_sweep_processes_fire_a_minutely_schedule_once_a_minute_for_five_minutes(owner):
    schedule = schedule_create(actor=owner, **MINUTELY)
    # Each process's clock starts at its own start and runs SPEED times as fast (its sleeps too): the
    # two disagree by what their starts differ, times SPEED, so they race on every due time.
    env = {**os.environ, "DATABASE_URL": database_url(), "CONN_MAX_AGE": "0"}
    env |= {"LD_PRELOAD": LIBFAKETIME, "FAKETIME": f"+0 x{SPEED}", "FAKETIME_NO_CACHE": "1"}
    command = [sys.executable, "manage.py", "sweep", "--interval", "5"]
    sweepers = [
        subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)
    ]
    try:
        # Five fake minutes from whenever the processes are up: the test waits on their work, not a clock.
        deadline = time.monotonic() + STARTING
        while ScheduleRun.objects.filter(schedule=schedule).count() < MINUTES and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        for sweeper in sweepers:
            sweeper.terminate()
        logs = [sweeper.communicate(timeout=30)[1].decode() for sweeper in sweepers]
    assert not [log for log in logs if "failed" in log or "Traceback" in log], logs
    runs = list(ScheduleRun.objects.filter(schedule=schedule).order_by("due_at"))
    assert len(runs) >= MINUTES, logs
    first = schedule.next_run_at
    assert [run.due_at for run in runs] == [first + timedelta(minutes=n) for n in range(len(runs))]
    assert {run.outcome for run in runs} == {"sent"}
    tasks = Task.objects.filter(schedule_runs__schedule=schedule)
    assert tasks.count() == len(runs) == len({run.task_id for run in runs})
