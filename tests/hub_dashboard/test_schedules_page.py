"""The schedules page (Django's test client): owners and admins create a schedule and pause, resume,
run and delete it, through the same tools as MCP and REST; members and viewers see the schedules
and their runs, without the form or the buttons, and their posts are refused."""

from __future__ import annotations

import pytest

from hub_schedules.models import Schedule, ScheduleRun
from hub_tasks.models import Task
from tests.helpers.dashboard import text

pytestmark = pytest.mark.django_db

NIGHTLY = {
    "name": "nightly",
    "task": "Review the merges.",
    "alias": "reviewer",
    "cron": "0 2 * * *",
    "time_zone": "Europe/Berlin",
    "missed": "catch_up_once",
    "overlap": "skip",
    "priority": "normal",
}


def test_an_admin_creates_runs_pauses_resumes_and_deletes_a_schedule(login, network):
    browser = login("admin")
    created = browser.post("/schedules/", NIGHTLY)
    assert created.status_code == 302
    schedule = Schedule.objects.get()
    assert (schedule.cron, schedule.time_zone, schedule.created_by) == ("0 2 * * *", "Europe/Berlin", "user:operator")
    page = text(browser.get("/schedules/"))
    assert "nightly" in page and "Europe/Berlin" in page and "none yet" in page

    browser.post(f"/schedules/{schedule.pk}/run/")
    (run,) = ScheduleRun.objects.filter(schedule=schedule)
    assert Task.objects.get(pk=run.task_id).to_name == "reviewer"
    assert "sent" in text(browser.get("/schedules/"))
    browser.post(f"/schedules/{schedule.pk}/pause/")
    assert Schedule.objects.get().paused is True and "Resume" in text(browser.get("/schedules/"))
    browser.post(f"/schedules/{schedule.pk}/resume/")
    assert Schedule.objects.get().paused is False
    browser.post(f"/schedules/{schedule.pk}/delete/")
    assert not Schedule.objects.exists() and Task.objects.filter(pk=run.task_id).exists()


def test_a_bad_cron_is_shown_on_the_form(login, network):
    reply = login("owner").post("/schedules/", NIGHTLY | {"cron": "0 2 * *"})
    assert reply.status_code == 400 and "cron" in text(reply)
    assert not Schedule.objects.exists()


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_members_and_viewers_see_schedules_but_change_none(login, network, role):
    login("owner", username="boss").post("/schedules/", NIGHTLY)
    schedule = Schedule.objects.get()
    browser = login(role)
    page = text(browser.get("/schedules/"))
    assert "nightly" in page and "Run now" not in page and "New schedule" not in page
    browser.post(f"/schedules/{schedule.pk}/run/")
    browser.post(f"/schedules/{schedule.pk}/delete/")
    assert Schedule.objects.exists() and not ScheduleRun.objects.exists()
    browser.post("/schedules/", NIGHTLY | {"name": "mine"})
    assert Schedule.objects.count() == 1
