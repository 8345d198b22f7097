"""The schedule tools through the registry (as MCP, REST and the dashboard call them): arguments
parsed by their specs, refusals in the catalogue's codes, answers in the result object."""

from __future__ import annotations

from datetime import timedelta

import pytest

from hub_core.errors import HubError
from hub_schedules.services import schedules_fire_due
from hub_tasks.models import Task
from tests.helpers.calls import (
    get_task,
    schedule_create,
    schedule_delete,
    schedule_list,
    schedule_pause,
    schedule_resume,
    schedule_run_now,
)

pytestmark = pytest.mark.django_db

NIGHTLY = {"name": "nightly", "alias": "reviewer", "task": "Review the merges.", "cron": "0 2 * * *"}


def refused(call, **arguments) -> HubError:
    with pytest.raises(HubError) as refusal:
        call(**arguments)
    return refusal.value


def test_create_answers_the_schedule_and_list_shows_it(owner, viewer):
    created = schedule_create(actor=owner, **NIGHTLY, time_zone="Europe/Berlin", missed="skip", overlap="queue")
    assert created["ok"] is True
    schedule = created["schedule"]
    assert schedule["schedule_id"].startswith("sch_")
    assert (schedule["cron"], schedule["time_zone"], schedule["missed"], schedule["overlap"]) == (
        "0 2 * * *",
        "Europe/Berlin",
        "skip",
        "queue",
    )
    assert schedule["next_run_at"].endswith(("T00:00:00.000Z", "T01:00:00.000Z"))  # 02:00 in Berlin, CET or CEST
    (listed,) = schedule_list(actor=viewer)["schedules"]
    assert listed == schedule
    assert schedule_list(actor=viewer, schedule_id="sch_none")["schedules"] == []


def test_the_specs_check_the_arguments_before_the_service(owner):
    assert refused(schedule_create, actor=owner, **NIGHTLY | {"interval_seconds": 5}).extra["field"] == (
        "interval_seconds"
    )
    assert refused(schedule_create, actor=owner, **NIGHTLY | {"missed": "always"}).extra["field"] == "missed"
    assert refused(schedule_create, actor=owner, **NIGHTLY | {"cron": "0 25 * * *"}).extra["field"] == "cron"
    assert refused(schedule_create, actor=owner, **NIGHTLY | {"time_zone": "Nowhere/City"}).extra["field"] == (
        "time_zone"
    )
    assert refused(schedule_create, actor=owner, name="x", task="t", cron="* * * * *").code == "invalid_argument"


def test_members_and_viewers_may_not_change_schedules(owner, agent, viewer):
    schedule_id = schedule_create(actor=owner, **NIGHTLY)["schedule"]["schedule_id"]
    for actor in (agent, viewer):
        assert refused(schedule_create, actor=actor, **NIGHTLY | {"name": "other"}).code == "permission_denied"
        for call in (schedule_pause, schedule_resume, schedule_run_now, schedule_delete):
            assert refused(call, actor=actor, schedule_id=schedule_id).code == "permission_denied"
    assert refused(schedule_pause, actor=owner, schedule_id="sch_nope").code == "schedule_not_found"


def test_pause_resume_run_now_and_delete(owner, clock):
    schedule_id = schedule_create(actor=owner, **NIGHTLY | {"cron": "* * * * *"})["schedule"]["schedule_id"]
    paused = schedule_pause(actor=owner, schedule_id=schedule_id)["schedule"]
    assert paused["paused"] is True and paused["next_run_at"] is None
    clock.tick(timedelta(minutes=2))
    assert schedules_fire_due() == 0
    ran = schedule_run_now(actor=owner, schedule_id=schedule_id)
    assert (ran["ok"], ran["outcome"]) == (True, "sent")
    assert get_task(actor=owner, task_id=ran["task_id"])["task"]["to_name"] == "reviewer"
    resumed = schedule_resume(actor=owner, schedule_id=schedule_id)["schedule"]
    assert resumed["paused"] is False and resumed["next_run_at"] is not None
    (run,) = schedule_list(actor=owner)["schedules"][0]["runs"]
    assert (run["task_id"], run["run_now"], run["task_status"]) == (ran["task_id"], True, "delivered")
    assert schedule_delete(actor=owner, schedule_id=schedule_id) == {"ok": True, "deleted": True}
    assert schedule_list(actor=owner)["schedules"] == []
    assert Task.objects.filter(pk=ran["task_id"]).exists()
