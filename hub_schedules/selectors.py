"""Reading schedules, scoped to the caller's networks."""

from __future__ import annotations

from typing import Any

from hub_agents.actors import Actor
from hub_core.formats import timestamp
from hub_schedules.models import RUNS_SHOWN, Schedule, ScheduleRun


def schedule_list(
    *, actor: Actor, network_id: str | None = None, schedule_id: str | None = None, limit: int = 50
) -> list[dict[str, Any]]:
    """schedule_list: the caller's networks' schedules by name, each with its latest runs."""
    schedules = Schedule.objects.filter(network_id__in=actor.readable_networks(network_id))
    if schedule_id is not None:
        schedules = schedules.filter(pk=schedule_id)
    return [schedule_row(schedule) for schedule in schedules.order_by("network_id", "name")[:limit]]


def schedule_row(schedule: Schedule) -> dict[str, Any]:
    """A schedule as schedule_list answers it, with its latest runs."""
    runs = schedule.runs.select_related("task").order_by("-due_at", "-id")[:RUNS_SHOWN]
    return {
        "schedule_id": schedule.pk,
        "network_id": schedule.network_id,
        "name": schedule.name,
        "alias": schedule.alias,
        "required_skills": schedule.required_skills,
        "task": schedule.task,
        "priority": schedule.priority,
        "cron": schedule.cron or None,
        "interval_seconds": schedule.interval_seconds,
        "time_zone": schedule.time_zone,
        "missed": schedule.missed,
        "overlap": schedule.overlap,
        "paused": schedule.paused,
        "next_run_at": None if schedule.paused else timestamp(schedule.next_run_at),
        "created_by": schedule.created_by,
        "created_at": timestamp(schedule.created_at),
        "runs": [run_row(run) for run in runs],
    }


def run_row(run: ScheduleRun) -> dict[str, Any]:
    return {
        "due_at": timestamp(run.due_at),
        "outcome": run.outcome,
        "task_id": run.task_id,
        "task_status": run.task.status if run.task is not None else None,
        "reason": run.reason,
        "run_now": run.run_now,
    }
