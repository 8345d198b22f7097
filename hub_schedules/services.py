"""Recurring schedules: every write (create, pause, resume, run now, delete) and the firing of due
runs, which the sweep calls (hub_tools' `sweep` command).

Who may change a network's schedules is who may change its approval rules: its owners and admins
(and their tokens). Every change is audited.

Exactly once: a due run is fired under the schedule's row lock (skipping rows another sweeper holds),
after a compare-and-swap of next_run_at from the due time it read, and it inserts its ScheduleRun,
unique per (schedule, due time), before sending. On SQLite, where row locks are no-ops, the swap and
the unique row still let only one sweeper through. Each sent run is an ordinary task (task_send,
with a client_request_id naming the schedule and the due time), linked to its run row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from django.db import IntegrityError, transaction
from django.utils import timezone

from hub_agents.actors import Actor
from hub_agents.audit import audit_record
from hub_agents.models import AuditEntry, Role
from hub_core.errors import HubError, invalid_argument
from hub_core.events import sealed_atomic
from hub_core.formats import timestamp
from hub_schedules.models import MISSED_AFTER, Missed, Overlap, Schedule, ScheduleRun
from hub_tasks.models import POOL, TERMINAL, Priority
from hub_tasks.services import task_send

# The audit log's action for every change of a schedule (`change` in its detail says which).
AUDIT_ACTION = AuditEntry.Action.SCHEDULE_CHANGED


@dataclass(frozen=True)
class RunStarted:
    """schedule_run_now's answer: the run, and its task (None when send_task refused it)."""

    schedule_id: str
    due_at: str
    outcome: str
    task_id: str | None
    reason: str


def schedule_when_check(cron: str | None, interval_seconds: int | None, time_zone: str) -> None:
    """A cron expression or an interval (exactly one), in an IANA time zone (the admin asks it too)."""
    if (cron is None) == (interval_seconds is None):
        raise invalid_argument("cron", "and interval_seconds: give exactly one of them")
    try:
        zone = ZoneInfo(time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        problem = f"is not an IANA time zone (like Europe/Berlin or UTC): {time_zone!r}"
        raise invalid_argument("time_zone", problem) from None
    if cron is not None:
        try:
            CronSim(cron, timezone.now().astimezone(zone))
        except CronSimError as error:
            raise invalid_argument("cron", f"is not a cron expression ({error}): {cron!r}") from None


def _check_target(alias: str | None, required_skills: list[str] | None) -> str:
    if required_skills:
        if alias not in (None, POOL):
            raise HubError(
                "pool_alias_required",
                f'required_skills posts an open task to the pool: leave alias out or pass "{POOL}" (got {alias!r}).',
                status=409,
            )
        return POOL
    if alias is None:
        raise invalid_argument("alias", "is required unless required_skills sends the task to the pool")
    return alias


def schedule_audit(actor: Actor | str, schedule: Schedule, change: str, **detail: object) -> None:
    audit_record(
        network_id=schedule.network_id,
        action=AUDIT_ACTION,
        actor=actor if isinstance(actor, str) else actor.label,
        target=f"schedule {schedule.name} ({schedule.pk})",
        change=change,
        **detail,
    )


@transaction.atomic
def schedule_create(
    *,
    actor: Actor,
    name: str,
    task: str,
    alias: str | None = None,
    required_skills: list[str] | None = None,
    cron: str | None = None,
    interval_seconds: int | None = None,
    time_zone: str | None = None,
    missed: str = Missed.CATCH_UP_ONCE,
    overlap: str = Overlap.SKIP,
    priority: str = Priority.NORMAL,
    context: str | None = None,
    ttl_seconds: int | None = None,
    lease_seconds: int | None = None,
    max_attempts: int = 1,
    budget_usd: float | None = None,
    budget_tokens: int | None = None,
    paused: bool | None = False,
    network_id: str | None = None,
) -> Schedule:
    """schedule_create: a task template sent on a cron expression (in time_zone) or every
    interval_seconds (from now), to an alias or to the pool by required_skills; time_zone: UTC unless said."""
    time_zone = time_zone or "UTC"
    network = actor.writable_network(network_id)
    actor.check_administer(network, changes="schedules")
    schedule_when_check(cron, interval_seconds, time_zone)
    target = _check_target(alias, required_skills)
    if Schedule.objects.filter(network_id=network, name=name).exists():
        raise _name_taken(network, name)
    schedule = Schedule(
        network_id=network,
        name=name,
        alias=target,
        required_skills=required_skills or None,
        task=task,
        context=context,
        priority=priority,
        ttl_seconds=ttl_seconds,
        lease_seconds=lease_seconds,
        max_attempts=max_attempts,
        budget_usd=budget_usd,
        budget_tokens=budget_tokens,
        cron=cron or "",
        interval_seconds=interval_seconds,
        time_zone=time_zone,
        missed=missed,
        overlap=overlap,
        paused=bool(paused),
        created_by=actor.label,
        created_at=timezone.now(),
    )
    schedule.next_run_at = schedule.next_due(schedule.created_at)
    try:
        with transaction.atomic():  # a savepoint: a concurrent create of the same name may win
            schedule.save(force_insert=True)
    except IntegrityError:
        raise _name_taken(network, name) from None
    schedule_audit(actor, schedule, "created", every=schedule.every, time_zone=time_zone, alias=target)
    return schedule


def _name_taken(network_id: str, name: str) -> HubError:
    return HubError(
        "schedule_name_taken", f"Network {network_id} has a schedule named {name!r}; choose another name.", status=409
    )


def _lock(actor: Actor, schedule_id: str) -> Schedule:
    """The schedule's row, locked, if the actor may change it."""
    schedule = (
        Schedule.objects.select_for_update().filter(pk=schedule_id, network_id__in=actor.readable_networks()).first()
    )
    if schedule is None:
        raise HubError(
            "schedule_not_found", f"No schedule {schedule_id!r} in your networks; schedule_list shows them.", status=404
        )
    actor.check_administer(schedule.network_id, changes="schedules")
    return schedule


@transaction.atomic
def schedule_pause(*, actor: Actor, schedule_id: str) -> Schedule:
    """schedule_pause: no run fires until it is resumed (a paused schedule's due times are not caught up)."""
    schedule = _lock(actor, schedule_id)
    if not schedule.paused:
        schedule.paused = True
        schedule.save(update_fields=["paused"])
        schedule_audit(actor, schedule, "paused")
    return schedule


@transaction.atomic
def schedule_resume(*, actor: Actor, schedule_id: str) -> Schedule:
    """schedule_resume: it fires again from its next due time after now."""
    schedule = _lock(actor, schedule_id)
    if schedule.paused:
        schedule.paused = False
        schedule.next_run_at = schedule.next_due(timezone.now())
        schedule.save(update_fields=["paused", "next_run_at"])
        schedule_audit(actor, schedule, "resumed")
    return schedule


@transaction.atomic
def schedule_delete(*, actor: Actor, schedule_id: str) -> None:
    """schedule_delete: the schedule and its run rows go; the tasks it sent stay."""
    schedule = _lock(actor, schedule_id)
    schedule_audit(actor, schedule, "deleted")
    schedule.delete()


@sealed_atomic
def schedule_run_now(*, actor: Actor, schedule_id: str) -> RunStarted:
    """schedule_run_now: one run now, paused or not, whatever its overlap rule; its next due time stays."""
    schedule = _lock(actor, schedule_id)
    schedule_audit(actor, schedule, "run_now")
    now = timezone.now()
    run = _run(schedule, now, overlap=Overlap.QUEUE, run_now=True) or schedule.runs.get(due_at=now)
    return RunStarted(
        schedule_id=schedule.pk,
        due_at=timestamp(run.due_at) or "",
        outcome=run.outcome,
        task_id=run.task_id,
        reason=run.reason,
    )


# --- firing: the sweep ---------------------------------------------------------------------------


def schedules_fire_due(*, now: datetime | None = None) -> int:
    """Fire every schedule whose next run is due, each due time once across sweepers; answer how many
    tasks were sent."""
    now = now or timezone.now()
    due = Schedule.objects.filter(paused=False, next_run_at__lte=now).order_by("next_run_at")
    sent = 0
    for schedule_id in list(due.values_list("pk", flat=True)):
        with sealed_atomic():
            # skip_locked: a row another sweeper holds is being fired by it.
            locked = Schedule.objects.select_for_update(skip_locked=True)
            schedule = locked.filter(pk=schedule_id, paused=False, next_run_at__lte=now).first()
            if schedule is not None:
                sent += _fire(schedule, now)
    return sent


def _fire(schedule: Schedule, now: datetime) -> int:
    """The due run of a locked schedule, and its next due time after now."""
    due = schedule.next_run_at
    following = schedule.next_due(due)
    upcoming = following if following > now else schedule.next_due(now)
    # Compare-and-swap: only the sweeper that moves next_run_at from this due time fires it.
    if Schedule.objects.filter(pk=schedule.pk, next_run_at=due).update(next_run_at=upcoming) != 1:
        return 0
    schedule.next_run_at = upcoming
    missed = following <= now or now - due > MISSED_AFTER
    if missed and schedule.missed == Missed.SKIP:
        reason = f"missed (nothing swept then); next at {timestamp(upcoming)}"
        _record(schedule, due, ScheduleRun.Outcome.MISSED, reason)
        return 0
    run = _run(schedule, due, overlap=schedule.overlap)
    return int(run is not None and run.outcome == ScheduleRun.Outcome.SENT)


def _record(
    schedule: Schedule, due_at: datetime, outcome: str, reason: str = "", **fields: object
) -> ScheduleRun | None:
    """The run row of that instant, or None when it has one already (a run now at a due time to the
    microsecond): the unique (schedule, due_at) row is the last guard, in a savepoint."""
    try:
        with transaction.atomic():
            return ScheduleRun.objects.create(
                schedule=schedule, due_at=due_at, outcome=outcome, reason=reason, **fields
            )
    except IntegrityError:
        return None


def _run(schedule: Schedule, due_at: datetime, *, overlap: str, run_now: bool = False) -> ScheduleRun | None:
    """One run of a locked schedule at due_at: a task sent, or a run row saying why not; None when
    that instant has its run already."""
    if overlap == Overlap.SKIP:
        previous = schedule.runs.filter(task__isnull=False).select_related("task").order_by("-due_at").first()
        if previous is not None and previous.task.status not in TERMINAL:
            reason = f"the run due {timestamp(previous.due_at)} (task {previous.task_id}) is still open"
            return _record(schedule, due_at, ScheduleRun.Outcome.SKIPPED, reason, run_now=run_now)
    run = _record(schedule, due_at, ScheduleRun.Outcome.SENT, run_now=run_now)
    if run is None:
        return None
    try:
        with transaction.atomic():  # a savepoint: a refused send leaves the run row, saying why
            sent = task_send(
                actor=schedule_actor(schedule),
                alias=schedule.alias,
                task=schedule.task,
                priority=schedule.priority,
                context=schedule.context,
                ttl_seconds=schedule.ttl_seconds,
                network_id=schedule.network_id,
                client_request_id=f"{schedule.pk}@{due_at.isoformat()}",
                lease_seconds=schedule.lease_seconds,
                max_attempts=schedule.max_attempts,
                required_skills=schedule.required_skills,
                budget_usd=schedule.budget_usd,
                budget_tokens=schedule.budget_tokens,
            )
    except HubError as refusal:
        run.outcome, run.reason = ScheduleRun.Outcome.FAILED, refusal.message
        run.save(update_fields=["outcome", "reason"])
        return run
    run.task_id = sent.task_id
    run.save(update_fields=["task"])
    return run


def schedule_actor(schedule: Schedule) -> Actor:
    """Who sends a schedule's tasks: the schedule itself, a member of its one network (the task's
    created_by names it)."""
    return Actor(
        label=f"schedule:{schedule.name} ({schedule.pk})",
        key=f"schedule:{schedule.pk}",
        roles={schedule.network_id: Role.MEMBER},
        network_bound=True,
    )
