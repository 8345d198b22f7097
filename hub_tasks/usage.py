"""What a run used (tokens in and out, cost, model, duration): stored on the task's attempt it was
reported for, and summed per agent, model and day (AgentUsage) for the dashboard, /metrics and the
budgets (hub_tasks.spending assesses them as each report adds to a day).

A run is reported by report_completion and by send_reply (a failed run: send_reply status=failed,
then report_completion). Each field of an attempt is set once, by the first report that gives it, so
a run reported twice, or a report replayed, counts once. Callers hold the task's row lock, which
orders every write to its attempts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from hub_core.errors import invalid_argument
from hub_tasks.models import AgentUsage, Task, TaskAttempt
from hub_tasks.spending import budgets_account


@dataclass(frozen=True)
class RunUsage:
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    model: str | None = None

    def __bool__(self) -> bool:
        return any(value is not None for value in (self.tokens_in, self.tokens_out, self.cost_usd, self.model))


USAGE_FIELDS = ("tokens_in", "tokens_out", "cost_usd", "model")


def usage_required_task(usage: RunUsage) -> None:
    """Usage given on a reply that answers no task: there is no attempt to store it on."""
    if usage:
        named = next(name for name in USAGE_FIELDS if getattr(usage, name) is not None)
        raise invalid_argument(named, "is a run's usage, stored on a task's attempt: pass in_reply_to = that task_id")


def usage_attempt(task: Task, alias: str) -> TaskAttempt | None:
    """The attempt a report by `alias` is about: its latest attempt of the task that it took (acked,
    started) or that ended, else its latest at all. An attempt delivered again to it since (a retry
    released while the report was on its way) is not its run until it takes it."""
    mine = TaskAttempt.objects.filter(task=task, alias=alias).order_by("-number")
    taken = Q(acked_at__isnull=False) | Q(started_at__isnull=False) | Q(ended_at__isnull=False)
    return mine.filter(taken).first() or mine.first()


def usage_record(
    attempt: TaskAttempt | None,
    *,
    network_id: str,
    usage: RunUsage,
    duration_seconds: float | None = None,
    now: datetime | None = None,
) -> None:
    """Store a report's usage on the attempt (fields it has not got yet) and add what was new to
    the alias's AgentUsage row of the day. The caller holds the task's lock."""
    if attempt is None or not (usage or duration_seconds is not None):
        return
    attempt.refresh_from_db(fields=[*USAGE_FIELDS, "duration_seconds"])
    changed = []
    fresh_usage = bool(usage) and all(getattr(attempt, name) is None for name in USAGE_FIELDS)
    if fresh_usage:  # the run's usage is one report's: a second report for it adds nothing
        for name in USAGE_FIELDS:
            setattr(attempt, name, getattr(usage, name))
        changed += USAGE_FIELDS
    if duration_seconds is not None and attempt.duration_seconds is None:
        attempt.duration_seconds = duration_seconds
        changed.append("duration_seconds")
    if not changed:
        return
    attempt.save(update_fields=changed)
    if fresh_usage:
        now = now or timezone.now()
        _add_to_day(network_id, attempt.alias, usage, now)
        budgets_account(network_id=network_id, alias=attempt.alias, task_id=attempt.task_id, now=now)


def _add_to_day(network_id: str, alias: str, usage: RunUsage, now: datetime) -> None:
    key = {"network_id": network_id, "alias": alias, "model": usage.model or "", "day": timezone.localdate(now)}
    added = {
        "runs": F("runs") + 1,
        "tokens_in": F("tokens_in") + (usage.tokens_in or 0),
        "tokens_out": F("tokens_out") + (usage.tokens_out or 0),
        "cost_usd": F("cost_usd") + (usage.cost_usd or 0),
    }
    if AgentUsage.objects.filter(**key).update(**added):
        return
    try:
        with transaction.atomic():  # a savepoint: the alias's first run of the day may race another
            AgentUsage.objects.create(
                **key,
                runs=1,
                tokens_in=usage.tokens_in or 0,
                tokens_out=usage.tokens_out or 0,
                cost_usd=usage.cost_usd or 0,
            )
    except IntegrityError:
        AgentUsage.objects.filter(**key).update(**added)
