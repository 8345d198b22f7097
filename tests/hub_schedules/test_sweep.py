"""The sweep fires schedules: `manage.py sweep --once` in process, and two `manage.py sweep`
processes side by side for five minutes of a sped-up clock (libfaketime), each minute once, while
an agent takes each run's task from two live hub processes in turn."""

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
from tests.helpers.live import database_url, mcp_ok

MINUTELY = {"name": "minutely", "alias": "worker", "task": "tick", "cron": "* * * * *", "overlap": Overlap.QUEUE}


@pytest.mark.django_db
def test_the_sweep_command_fires_a_due_schedule(clock, owner):
    schedule = schedule_create(actor=owner, **MINUTELY)
    clock.move_to(schedule.next_run_at + timedelta(seconds=1))
    call_command("sweep", "--once")
    call_command("sweep", "--once")
    (run,) = ScheduleRun.objects.filter(schedule=schedule)
    assert run.outcome == "sent" and Task.objects.filter(pk=run.task_id, content="tick").exists()


SPEED = 10  # fake seconds per real second: five minutes in thirty seconds, once the processes are up
MINUTES = 5
STARTING = 90  # real seconds the processes may take to start and sweep five minutes on a busy machine
LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"  # Debian's faketime package


@pytest.mark.slow  # four processes of their own: some 40 s
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not os.path.exists(LIBFAKETIME), reason="needs libfaketime (apt-get install faketime)")
def test_two_sweep_processes_fire_a_minutely_schedule_once_a_minute_for_five_minutes(owner, hub_server, agent_http):
    hubs = [hub_server(), hub_server()]  # the agent's side: each run's task is an ordinary task
    schedule = schedule_create(actor=owner, **MINUTELY)
    # Each process's clock starts at its own start and runs SPEED times as fast (its sleeps too): the
    # two disagree by what their starts differ, times SPEED, so they race on every due time.
    env = {**os.environ, "DATABASE_URL": database_url(), "CONN_MAX_AGE": "0"}
    env |= {"LD_PRELOAD": LIBFAKETIME, "FAKETIME": f"+0 x{SPEED}", "FAKETIME_NO_CACHE": "1"}
    command = [sys.executable, "manage.py", "sweep", "--interval", "5"]
    sweepers = [
        subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)
    ]
    taken: list[str] = []  # the task messages the agent read, from either hub, each acknowledged
    try:
        # Five fake minutes from whenever the processes are up: the test waits on their work, not a clock.
        deadline = time.monotonic() + STARTING
        turn = 0
        while ScheduleRun.objects.filter(schedule=schedule).count() < MINUTES and time.monotonic() < deadline:
            hub, turn = hubs[turn % 2], turn + 1
            for message in mcp_ok(hub, agent_http, "get_inbox", alias="worker")["messages"]:
                mcp_ok(hub, agent_http, "ack_inbox", alias="worker", message_id=message["id"])
                taken.append(message["task_id"])
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
    for hub in hubs:  # and what the sweeps sent after the last poll
        for message in mcp_ok(hub, agent_http, "get_inbox", alias="worker")["messages"]:
            mcp_ok(hub, agent_http, "ack_inbox", alias="worker", message_id=message["id"])
            taken.append(message["task_id"])
    assert sorted(taken) == sorted(run.task_id for run in runs)  # each run's task taken once, none other
