"""Budgets, the operator's side: budget_set, budget_delete (owners and admins, audited),
budgets_list, and the sweep's turn of the periods. How a budget follows usage is hub_tasks.spending;
how it holds and releases work is hub_tasks.budgets and hub_tasks.lifecycle.

Each change locks the network's caps, then its budgets, in primary-key order (the order admission
takes them in), so two changes, or a change and the sweep, release what waits one after the other:
each waiting task once.
"""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from hub_agents.actors import Actor
from hub_agents.audit import audit_record
from hub_agents.models import AuditEntry
from hub_core.errors import HubError, unusable_argument
from hub_core.events import sealed_atomic
from hub_core.formats import timestamp
from hub_fleet.results import Row
from hub_tasks.budgets import budget_spend, budgets_lock, holds, next_period, period_start
from hub_tasks.lifecycle import budget_waiters_release
from hub_tasks.models import Budget, Cap, OnLimit, Task, TaskStatus
from hub_tasks.spending import DELETED, SET, budget_announce, budget_assess

# The audit log's action for every change of a budget (`change` in its detail says which).
AUDIT_ACTION = AuditEntry.Action.BUDGET_CHANGED
OK, WARNED, REACHED = "ok", "warned", "reached"


def _audit(actor: Actor, budget: Budget, change: str, **detail: object) -> None:
    audit_record(
        network_id=budget.network_id, action=AUDIT_ACTION, actor=actor.label,
        target=f"budget {budget.label} ({budget.pk})", change=change, **detail,
    )  # fmt: skip


def _lock_network(network_id: str) -> list[Budget]:
    """The network's caps, then its budgets, locked in primary-key order; the budgets."""
    list(Cap.objects.select_for_update().filter(network_id=network_id).order_by("pk").values_list("pk", flat=True))
    return budgets_lock(network_id)


def budget_rows(budgets: list[Budget], *, now: datetime | None = None) -> list[Row]:
    """Each budget as budget_list shows it: its limits, its period's spend, its state and the tasks
    waiting for it (one aggregate per budget, one count for all)."""
    now = now or timezone.now()
    waiting = dict(
        Task.objects.filter(waiting_budget__in=[b.pk for b in budgets], status=TaskStatus.CREATED)
        .values_list("waiting_budget")
        .annotate(n=Count("pk"))
        .order_by()
    )
    rows = []
    for budget in budgets:
        spend = budget_spend(budget, now)
        start = period_start(budget.period, now)
        state = REACHED if holds(budget, now) else WARNED if budget.warned_for == start else OK
        rows.append(
            {
                "budget_id": budget.pk,
                "network_id": budget.network_id,
                "alias": budget.alias or None,
                "period": budget.period,
                "limit_usd": budget.limit_usd,
                "limit_tokens": budget.limit_tokens,
                "on_limit": budget.on_limit,
                "spent_usd": spend.usd,
                "spent_tokens": spend.tokens,
                "percent": round(spend.share(budget) * 100, 1),
                "state": state,
                "period_start": start.isoformat(),
                "period_ends_at": timestamp(next_period(budget.period, now)),
                "waiting": waiting.get(budget.pk, 0),
                "created_by": budget.created_by,
                "created_at": timestamp(budget.created_at),
                "updated_at": timestamp(budget.updated_at),
            }
        )
    return rows


@sealed_atomic
def budget_set(
    *,
    actor: Actor,
    period: str,
    alias: str | None = None,
    limit_usd: float | None = None,
    limit_tokens: int | None = None,
    on_limit: str = OnLimit.HOLD,
    network_id: str | None = None,
) -> Row:
    """budget_set: the network's (or, with `alias`, one agent's) budget for the period, stated whole:
    its limits (at least one; one left out is none) and what a spent budget does. A budget of that
    scope and period is changed; raised above what is spent, what waited for it is released at once."""
    network = actor.writable_network(network_id)
    actor.check_administer(network, changes="budgets")
    if limit_usd is None and limit_tokens is None:
        # The schema admits it (each limit is optional): a 409, as every refusal of schema-valid input.
        raise unusable_argument("limit_usd", "or limit_tokens must be given: a budget limits USD, tokens or both")
    alias = alias or ""
    now = timezone.now()
    _lock_network(network)
    limits = {"limit_usd": limit_usd, "limit_tokens": limit_tokens, "on_limit": on_limit}
    budget = Budget.objects.select_for_update().filter(network_id=network, alias=alias, period=period).first()
    if budget is None:
        try:
            with transaction.atomic():  # a savepoint: a concurrent budget_set of the same scope may win
                budget = Budget.objects.create(
                    network_id=network, alias=alias, period=period, **limits, created_by=actor.label,
                    created_at=now, updated_at=now,
                )  # fmt: skip
        except IntegrityError:
            budget = Budget.objects.select_for_update().get(network_id=network, alias=alias, period=period)
        else:
            _audit(actor, budget, "created", **limits)
            if budget_assess(budget, now=now) is None:  # usage already reported this period counts
                budget_announce(budget, SET, now=now)
            return budget_rows([budget], now=now)[0]
    was = {name: getattr(budget, name) for name in limits}
    if was != limits:
        _audit(actor, budget, "changed", **limits, was=was)
        for name, value in limits.items():
            setattr(budget, name, value)
        budget.updated_at = now
        budget.save(update_fields=[*limits, "updated_at"])
        if budget_assess(budget, now=now) is None:
            budget_announce(budget, SET, now=now)
        budget_waiters_release(network, now=now)
    return budget_rows([budget], now=now)[0]


def _lock(actor: Actor, budget_id: str) -> Budget:
    found = Budget.objects.filter(pk=budget_id, network_id__in=actor.readable_networks()).first()
    if found is None:
        raise HubError(
            "budget_not_found", f"No budget {budget_id!r} in your networks; budget_list shows them.", status=404
        )
    actor.check_administer(found.network_id, changes="budgets")
    budgets = {budget.pk: budget for budget in _lock_network(found.network_id)}
    if budget_id not in budgets:  # deleted while we waited for the locks
        raise HubError("budget_not_found", f"Budget {budget_id!r} was deleted meanwhile.", status=404)
    return budgets[budget_id]


@sealed_atomic
def budget_delete(*, actor: Actor, budget_id: str) -> None:
    """budget_delete: the budget goes; the tasks that waited for it are delivered (or wait for another
    spent budget or a full cap of theirs)."""
    budget = _lock(actor, budget_id)
    _audit(actor, budget, "deleted", limit_usd=budget.limit_usd, limit_tokens=budget.limit_tokens)
    now = timezone.now()
    budget_announce(budget, DELETED, now=now)
    network = budget.network_id
    budget.delete()
    budget_waiters_release(network, now=now)


def budgets_list(*, actor: Actor, network_id: str | None = None) -> list[Row]:
    """budget_list: the budgets of the caller's networks, each with its period's spend and state."""
    budgets = Budget.objects.filter(network_id__in=actor.readable_networks(network_id)).order_by(
        "network_id", "alias", "period"
    )
    return budget_rows(list(budgets))


def budgets_sweep(*, now: datetime | None = None) -> int:
    """The sweep: budgets marked reached in a period that has ended are assessed in the new one, and
    the tasks waiting for a budget that holds nothing now are released; how many were delivered. One
    read of the reached budgets and one of the waiting tasks when there is nothing to do."""
    now = now or timezone.now()
    holding: set[str] = set()
    networks: set[str] = set()
    for budget in Budget.objects.filter(reached_for__isnull=False):
        if holds(budget, now):
            holding.add(budget.pk)
        else:
            networks.add(budget.network_id)
    waiting = Task.objects.filter(waiting_budget__isnull=False, status=TaskStatus.CREATED)
    networks |= {net for net, pk in waiting.values_list("network_id", "waiting_budget").distinct() if pk not in holding}
    delivered = 0
    for network in sorted(networks):
        with sealed_atomic():
            for budget in _lock_network(network):
                if budget.reached_for is not None and not holds(budget, now):
                    budget_assess(budget, now=now)
            delivered += budget_waiters_release(network, now=now)
    return delivered
