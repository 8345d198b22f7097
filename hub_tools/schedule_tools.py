"""Recurring schedules (hub_schedules): schedule_create, schedule_list, schedule_pause,
schedule_resume, schedule_run_now, schedule_delete.

A schedule sends a task template (to an alias, or to the pool by required_skills) on a cron
expression in an IANA time zone or every interval_seconds; each run is an ordinary task. The sweep
fires due runs (hub_tools' `sweep` command); owners and admins change schedules, anyone in the
network reads them."""

from __future__ import annotations

from typing import Any

from hub_schedules import models as S
from hub_schedules.models import Missed, Overlap, Schedule
from hub_schedules.selectors import schedule_list, schedule_row
from hub_schedules.services import (
    schedule_create,
    schedule_delete,
    schedule_pause,
    schedule_resume,
    schedule_run_now,
)
from hub_tasks import limits
from hub_tasks.models import POOL, Priority
from hub_tools import args as A
from hub_tools import params as P
from hub_tools import results as R
from hub_tools.schema import nullable, result, rows
from hub_tools.tool import Tool

SCHEDULE = {"type": "object", "description": "The schedule, as schedule_list shows it."}


def _schedule(schedule: Schedule) -> R.Fields:
    return {"schedule": schedule_row(schedule)}


def _schedules(found: list[dict[str, Any]]) -> R.Fields:
    return {"schedules": found}


def specs() -> list[Tool]:
    """These tools' specs, from the limits and choices as they are now."""
    schedule_id = P.identifier(
        "The schedule's id (sch_…), as schedule_create or schedule_list answered it.", required=True
    )
    changes = "Network owners and admins only; audited."
    return [
        Tool(
            name="schedule_create",
            title="Create a recurring schedule",
            description=(
                "Send a task on a cron expression (in time_zone) or every interval_seconds; each run is an "
                "ordinary task to alias, or with required_skills to the pool. missed: catch_up_once sends one run "
                "for a span the hub was down, skip none. overlap: while the last run's task is open, skip skips, "
                f"queue sends. {changes}"
            ),
            params={
                "name": P.identifier("Unique in the network.", required=True),
                "task": P.text("What each run asks.", required=True),
                "alias": P.identifier(f'The agent each run goes to (or "{POOL}" with required_skills).'),
                "required_skills": A.skills("Or: to the pool, for agents with these skills."),
                "cron": P.text("Cron expression, e.g. 0 2 * * *.", S.CRON_MAX),
                "interval_seconds": P.whole("Or: every this many seconds.", low=S.INTERVAL_MIN, high=S.INTERVAL_MAX),
                "time_zone": P.identifier("IANA time zone of cron (default UTC)."),
                "missed": P.choice("Runs missed while the hub was down.", Missed.values, default=Missed.CATCH_UP_ONCE),
                "overlap": P.choice("A run due while the last is open.", Overlap.values, default=Overlap.SKIP),
                "priority": P.choice("Priority.", Priority.values, default=Priority.NORMAL),
                "context": P.text("Background for each task."),
                "ttl_seconds": P.whole("Each task's TTL.", low=1, high=limits.TTL_MAX),
                "lease_seconds": P.whole("Each task's lease.", low=1, high=limits.LEASE_MAX),
                "max_attempts": P.whole("Each task's max_attempts.", low=1, high=limits.ATTEMPTS_MAX, default=1),
                "budget_usd": P.number("Each run's budget, USD.", low=limits.BUDGET_USD_MIN, high=limits.COST_MAX),
                "budget_tokens": P.whole("Each run's budget, tokens.", low=1, high=limits.TOKENS_MAX),
                "paused": P.flag("Created paused."),
                "network_id": A.NETWORK_ID,
            },
            service=schedule_create,
            render=_schedule,
            output=result(schedule=SCHEDULE),
        ),
        Tool(
            name="schedule_list",
            title="List schedules",
            description=(
                "The network's schedules by name: what each sends, when (cron or interval, time zone, "
                "next_run_at), its rules, paused, and its latest runs (due time, outcome, task and its status)."
            ),
            params={
                "schedule_id": P.identifier("Only this schedule."),
                "network_id": A.NETWORK_ID,
                "limit": A.AT_MOST,
            },
            service=schedule_list,
            render=_schedules,
            output=result(schedules=rows("By network, then name.")),
            read_only=True,
        ),
        Tool(
            name="schedule_pause",
            title="Pause a schedule",
            description=f"No run until it is resumed (due times while paused are not caught up). {changes}",
            params={"schedule_id": schedule_id},
            service=schedule_pause,
            render=_schedule,
            output=result(schedule=SCHEDULE),
            idempotent=True,
        ),
        Tool(
            name="schedule_resume",
            title="Resume a schedule",
            description=f"Runs again from its next due time after now. {changes}",
            params={"schedule_id": schedule_id},
            service=schedule_resume,
            render=_schedule,
            output=result(schedule=SCHEDULE),
            idempotent=True,
        ),
        Tool(
            name="schedule_run_now",
            title="Run a schedule now",
            description=(
                "One run now, paused or not, whatever its overlap rule; its next due time stays. Returns the "
                f"run's outcome and task_id. {changes}"
            ),
            params={"schedule_id": schedule_id},
            service=schedule_run_now,
            render=R.as_fields,
            output=result(
                schedule_id={"type": "string"},
                due_at={"type": "string"},
                outcome={"type": "string", "enum": S.ScheduleRun.Outcome.values},
                task_id=nullable("string"),
                reason={"type": "string"},
            ),
        ),
        Tool(
            name="schedule_delete",
            title="Delete a schedule",
            description=f"The schedule and its run records go; the tasks it sent stay. {changes}",
            params={"schedule_id": schedule_id},
            service=schedule_delete,
            render=R.deleted,
            output=result(deleted={"type": "boolean"}),
            destructive=True,
        ),
    ]
