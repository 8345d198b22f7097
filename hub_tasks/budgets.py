"""Budgets held by the hub: at most so many USD and/or tokens of runs' reported usage a day or a
month, for a network or one of its agents.

A budget's spend is the sum of its scope's AgentUsage rows since its period's first day (the hub's
local date, as AgentUsage counts days; a month starts on its first). Reports of usage move it
(hub_tasks.spending): at 80 % it is `warned_for` the period, at 100 % `reached_for` it, each set once
under the budget's row lock. While a budget is reached for the current period, a delivery of new work
to its scope waits `created` (Task.waiting_budget, list_tasks blocked) or, with on_limit "refuse", a
send or a claim is refused (budget_exhausted). A budget raised or deleted, or its period turned,
releases what waits (hub_tasks.lifecycle.budget_waiters_release), by priority then age.

Admission pays one indexed read of the network's reached budgets (mostly none) and no sums; only
when one is found reached are the network's budgets locked and read again, so a release committing
meanwhile is never missed.
Lock order: a network's caps, then all its budgets at once (primary-key order), then tasks
(skip_locked).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from django.db.models import Q, QuerySet, Sum
from django.utils import timezone

from hub_core.errors import HubError
from hub_core.formats import timestamp
from hub_tasks.models import POOL, AgentUsage, Budget, BudgetPeriod, Task

WARN_AT = 0.8  # the share of a limit at which the warning is sent


def period_start(period: str, now: datetime) -> date:
    """The first day of the budget period `now` falls in (the hub's local date)."""
    today = timezone.localdate(now)
    return today.replace(day=1) if period == BudgetPeriod.MONTH else today


@dataclass(frozen=True)
class Spend:
    tokens: int
    usd: float

    def share(self, budget: Budget) -> float:
        """The larger of the spent shares of its limits (1.0: reached)."""
        shares = []
        if budget.limit_usd:
            shares.append(self.usd / budget.limit_usd)
        if budget.limit_tokens:
            shares.append(self.tokens / budget.limit_tokens)
        return max(shares, default=0.0)


def budget_spend(budget: Budget, now: datetime) -> Spend:
    """What its scope's runs reported since its period began: one aggregate over AgentUsage rows."""
    rows = AgentUsage.objects.filter(network_id=budget.network_id, day__gte=period_start(budget.period, now))
    if budget.alias:
        rows = rows.filter(alias=budget.alias)
    sums = rows.aggregate(tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out"), usd=Sum("cost_usd"))
    return Spend((sums["tokens_in"] or 0) + (sums["tokens_out"] or 0), sums["usd"] or 0.0)


def holds(budget: Budget, now: datetime) -> bool:
    """Reached in the period that runs now (a mark of a past period holds nothing)."""
    return budget.reached_for is not None and budget.reached_for == period_start(budget.period, now)


def scope_aliases(task: Task) -> tuple[str, ...]:
    """The aliases of the budgets that count for a task: the network's ("") and its agent's. An open
    task is nobody's yet: only the network's count for it (its claimer's at the claim)."""
    return ("",) if task.to_name == POOL else ("", task.to_name)


def _scope(task: Task) -> Q:
    return Q(alias__in=scope_aliases(task))


def budgets_marked_reached(task: Task) -> QuerySet[Budget]:
    """The budgets of the task's scope marked reached for some period (holds() says if for this one)."""
    return Budget.objects.filter(_scope(task), network_id=task.network_id, reached_for__isnull=False)


def budget_holding(task: Task, *, now: datetime) -> Budget | None:
    """Before a task's delivery: the budget of its scope that is spent for this period, locked and read
    again (None: none; one indexed read when none is reached)."""
    ids = [budget.pk for budget in budgets_marked_reached(task) if holds(budget, now)]
    if not ids:
        return None
    return next((b for b in budgets_lock(task.network_id) if b.pk in ids and holds(b, now)), None)


def budgets_lock(network_id: str) -> list[Budget]:
    """Every budget of the network, locked in primary-key order. Always all of them, whichever the
    caller needs: a transaction that locks one budget, then another, could otherwise hold the higher
    while it waits for the lower."""
    return list(Budget.objects.select_for_update().filter(network_id=network_id).order_by("pk"))


def budget_exhausted(budget: Budget, *, now: datetime) -> HubError:
    """The refusal of new work for a spent budget with on_limit "refuse", naming it and its spend."""
    spend = budget_spend(budget, now)
    limits = [f"${spend.usd:.4f} of ${budget.limit_usd:.4f}"] if budget.limit_usd else []
    if budget.limit_tokens:
        limits.append(f"{spend.tokens} of {budget.limit_tokens} tokens")
    return HubError(
        "budget_exhausted",
        f"Budget {budget.label} ({budget.pk}) of network {budget.network_id} is spent: {' and '.join(limits)} since "
        f"{period_start(budget.period, now).isoformat()}. Send again once an owner raises it (budget_set) or the "
        f"period turns (at {timestamp(next_period(budget.period, now))}).",
        status=409,
        budget_id=budget.pk,
        spent_usd=spend.usd,
        spent_tokens=spend.tokens,
    )


def next_period(period: str, now: datetime) -> datetime:
    """When the period `now` falls in ends: the next local midnight, or the next month's first."""
    start = period_start(period, now)
    if period == BudgetPeriod.MONTH:
        following = date(start.year + start.month // 12, start.month % 12 + 1, 1)
    else:
        following = date.fromordinal(start.toordinal() + 1)
    zone = timezone.get_current_timezone()
    return datetime(following.year, following.month, following.day, tzinfo=zone)
