"""Recurring schedules over REST (/api/v1/schedules): the same tools, for a network's owners and
admins to change and anyone in it to read."""

from __future__ import annotations

import pytest

from hub_tasks.models import Task
from tests.helpers.rest import Api, assert_refused

pytestmark = pytest.mark.django_db

NIGHTLY = {"name": "nightly", "alias": "reviewer", "task": "Review the merges.", "cron": "0 2 * * *"}


def test_an_admin_creates_runs_pauses_resumes_and_deletes_a_schedule(client, network):
    admin = Api(client, network, "admin")
    created = admin.post("schedules", NIGHTLY | {"time_zone": "America/New_York", "interval_seconds": None})
    assert created.status_code == 201, created.content
    schedule_id = created.json()["schedule"]["schedule_id"]

    ran = admin.post(f"schedules/{schedule_id}/run")
    assert ran.status_code == 200 and ran.json()["outcome"] == "sent"
    assert Task.objects.get(pk=ran.json()["task_id"]).content == "Review the merges."
    assert admin.post(f"schedules/{schedule_id}/pause").json()["schedule"]["paused"] is True
    assert admin.post(f"schedules/{schedule_id}/resume").json()["schedule"]["paused"] is False
    (listed,) = admin.get("schedules").json()["schedules"]
    assert (listed["time_zone"], len(listed["runs"])) == ("America/New_York", 1)
    assert admin.post(f"schedules/{schedule_id}/delete").json() == {"ok": True, "deleted": True}
    assert admin.get("schedules").json()["schedules"] == []


def test_a_member_reads_but_may_not_change_and_a_repeat_name_is_a_409(client, network):
    admin, member = Api(client, network, "admin"), Api(client, network, "member")
    schedule_id = admin.post("schedules", NIGHTLY).json()["schedule"]["schedule_id"]
    assert [row["name"] for row in member.get("schedules").json()["schedules"]] == ["nightly"]
    assert_refused(member.post("schedules", NIGHTLY | {"name": "mine"}), 403, "permission_denied")
    assert_refused(member.post(f"schedules/{schedule_id}/run"), 403, "permission_denied")
    assert_refused(admin.post("schedules", NIGHTLY), 409, "schedule_name_taken")
    assert_refused(admin.post("schedules/sch_nope/pause"), 404, "schedule_not_found")
    assert_refused(admin.post("schedules", NIGHTLY | {"name": "bad", "cron": "nope"}), 400, "invalid_argument")
