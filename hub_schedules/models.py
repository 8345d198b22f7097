"""Recurring schedules: a task template sent on a cron expression (in an IANA time zone) or every so
many seconds. Each firing is a ScheduleRun, one per (schedule, due time): the unique pair is what
makes a due time fire once, whatever number of sweeps race (hub_schedules.services).

When a schedule is due is computed here (`next_due`), with cronsim for cron expressions: it follows
healthchecks.io's reading of DST (a local time skipped by spring-forward fires at the first instant
after the gap; one repeated by fall-back fires once).
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from cronsim import CronSim
from django.db import models
from django.db.models import Q
from django.utils import timezone

from hub_agents.models import Network
from hub_tasks.models import Priority, Task

NAME_MAX = 200
CRON_MAX = 200
INTERVAL_MIN = 60  # the sweep runs every few seconds: a shorter interval would be a busy loop
INTERVAL_MAX = 366 * 86_400
RUNS_SHOWN = 5  # the recent runs a listing shows with each schedule
# A due time the sweep finds later than this (or with a later due time past too) was missed: the hub
# or its sweep was down. `missed` says what then happens.
MISSED_AFTER = timedelta(seconds=60)


def new_schedule_id() -> str:
    return f"sch_{secrets.token_hex(8)}"


class Missed(models.TextChoices):
    CATCH_UP_ONCE = "catch_up_once"  # one run for the whole missed span
    SKIP = "skip"  # none: the next run is the next due time to come


class Overlap(models.TextChoices):
    SKIP = "skip"  # the previous run's task is still open: this run is recorded skipped, no task
    QUEUE = "queue"  # sent anyway


class Schedule(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=new_schedule_id, editable=False)
    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="schedules")
    name = models.CharField(max_length=NAME_MAX)
    # The task template: send_task's arguments that make sense for a recurring task.
    alias = models.CharField(max_length=200, help_text='The agent, or "pool" with required skills.')
    required_skills = models.JSONField(null=True, blank=True)
    task = models.TextField()
    context = models.TextField(null=True, blank=True)
    priority = models.CharField(max_length=8, choices=Priority.choices, default=Priority.NORMAL)
    ttl_seconds = models.PositiveIntegerField(null=True, blank=True)
    lease_seconds = models.PositiveIntegerField(null=True, blank=True)
    max_attempts = models.PositiveSmallIntegerField(default=1)
    budget_usd = models.FloatField(null=True, blank=True)
    budget_tokens = models.BigIntegerField(null=True, blank=True)
    # When: a cron expression in a time zone, or every interval_seconds from created_at.
    cron = models.CharField(max_length=CRON_MAX, blank=True)
    interval_seconds = models.PositiveIntegerField(null=True, blank=True)
    time_zone = models.CharField(max_length=64, default="UTC")
    missed = models.CharField(max_length=16, choices=Missed.choices, default=Missed.CATCH_UP_ONCE)
    overlap = models.CharField(max_length=8, choices=Overlap.choices, default=Overlap.SKIP)
    paused = models.BooleanField(default=False)
    next_run_at = models.DateTimeField()
    created_by = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["network", "name"], name="schedule_name_unique"),
            models.CheckConstraint(
                condition=(Q(cron="") & Q(interval_seconds__isnull=False))
                | (~Q(cron="") & Q(interval_seconds__isnull=True)),
                name="schedule_cron_or_interval",
            ),
        ]
        indexes = [models.Index(fields=["paused", "next_run_at"], name="schedule_due")]

    def __str__(self) -> str:
        return self.name

    @property
    def every(self) -> str:
        return self.cron or f"every {self.interval_seconds} s"

    def next_due(self, after: datetime) -> datetime:
        """The first due time strictly after `after`."""
        if self.interval_seconds is not None:
            step = timedelta(seconds=self.interval_seconds)
            passed = max(0, (after - self.created_at) // step + 1)
            return self.created_at + passed * step
        local = after.astimezone(ZoneInfo(self.time_zone))
        return next(iter(CronSim(self.cron, local))).astimezone(UTC)


class ScheduleRun(models.Model):
    """One due time of a schedule, and what it became: an ordinary task (sent), or none."""

    class Outcome(models.TextChoices):
        SENT = "sent"
        SKIPPED = "skipped"  # overlap=skip: the previous run's task was still open
        MISSED = "missed"  # missed=skip: the sweep was down when it was due
        FAILED = "failed"  # send_task refused it (its reason kept)

    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="runs")
    due_at = models.DateTimeField()
    task = models.ForeignKey(Task, null=True, blank=True, on_delete=models.SET_NULL, related_name="schedule_runs")
    outcome = models.CharField(max_length=8, choices=Outcome.choices)
    reason = models.TextField(blank=True)
    run_now = models.BooleanField(default=False, help_text="Started by schedule_run_now, not by its due time.")
    fired_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["schedule", "due_at"], name="schedule_run_once")]
        ordering = ["-due_at", "-id"]

    def __str__(self) -> str:
        return f"{self.schedule_id} at {self.due_at:%Y-%m-%d %H:%M} ({self.outcome})"
