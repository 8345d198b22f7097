"""Schedules in the admin: made there with the same checks (a cron expression or an interval, an
IANA time zone) and audited alike; their runs read-only."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from hub_agents.models import AuditEntry
from hub_schedules.models import Schedule

pytestmark = pytest.mark.django_db

FORM = {
    "name": "nightly",
    "alias": "coder",
    "task": "Review the merges.",
    "priority": "normal",
    "max_attempts": "1",
    "cron": "0 2 * * *",
    "time_zone": "Europe/Berlin",
    "missed": "catch_up_once",
    "overlap": "skip",
    "runs-TOTAL_FORMS": "0",
    "runs-INITIAL_FORMS": "0",
}


@pytest.fixture
def staff(django_user_model) -> Client:
    browser = Client()
    browser.force_login(django_user_model.objects.create_superuser("boss", email="boss@example.com"))
    return browser


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"cron": "0 2 * *"}, "cron expression"),
        ({"interval_seconds": "3600"}, "exactly one"),
        ({"time_zone": "Mars/Base"}, "IANA"),
    ],
)
def test_the_admin_refuses_what_schedule_create_refuses(staff, network, changes, said):
    reply = staff.post(reverse("admin:hub_schedules_schedule_add"), FORM | {"network": network.pk} | changes)
    assert reply.status_code == 200 and said in reply.content.decode()
    assert not Schedule.objects.exists()


def test_a_schedule_made_in_the_admin_is_due_and_audited(staff, network):
    reply = staff.post(reverse("admin:hub_schedules_schedule_add"), FORM | {"network": network.pk})
    assert reply.status_code == 302, reply.content.decode()[:2000]
    schedule = Schedule.objects.get()
    assert schedule.created_by == "user:boss" and schedule.next_run_at.minute == 0
    entry = AuditEntry.objects.get(action=AuditEntry.Action.SCHEDULE_CHANGED)
    assert entry.detail["change"] == "created" and entry.actor == "user:boss"
