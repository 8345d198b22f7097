"""Budgets follow the usage reported: after a run's usage is added to its agent's day (hub_tasks.usage),
the budgets of its network and of its agent are read again, each under its row lock, so the 80 %
warning and the 100 % mark are each set, sent and noticed once a period, whatever number of
processes report at once. A budget changed by its owners (hub_fleet.budgets) or whose period turned
(the sweep) is assessed the same way. How a reached budget holds work is hub_tasks.budgets.

The notice goes to whoever can act on it: an agent's budget to that agent's inbox; the network's to
the sender of the task whose run crossed the mark (it sends the work that will wait). The event goes
to the operators' feed (the dashboard, SSE, webhooks) and to that inbox's owner.
"""

from __future__ import annotations

from datetime import datetime

from hub_core.events import EventType, HubEvent, publish
from hub_tasks.budgets import WARN_AT, Spend, budget_spend, budgets_lock, next_period, period_start
from hub_tasks.lifecycle import HUB, inbox_deliver
from hub_tasks.models import Budget, InboxMessage, OnLimit, Task

WARNED, REACHED, RELEASED = "warned", "reached", "released"
# Its owners changed it (created, new limits) or deleted it: pages showing it read it again.
SET, DELETED = "set", "deleted"


def budgets_account(*, network_id: str, alias: str, task_id: str | None, now: datetime) -> None:
    """A run of `alias` reported usage: assess the network's budget(s) and the agent's, if any (one
    indexed read, and nothing more, when there is none)."""
    if not Budget.objects.filter(network_id=network_id, alias__in=["", alias]).exists():
        return
    for budget in budgets_lock(network_id):
        if budget.alias in ("", alias):
            budget_assess(budget, now=now, notify=None if budget.alias else _sender_of(task_id))


def _sender_of(task_id: str | None) -> str | None:
    return Task.objects.filter(pk=task_id).values_list("from_name", flat=True).first() if task_id else None


def budget_assess(budget: Budget, *, now: datetime, notify: str | None = None) -> str | None:
    """Bring a locked budget's marks in step with its spend now: warned at 80 % and reached at 100 %
    (each once a period, with an event and a notice: to its agent, else to `notify`), released below
    100 % (an event; the caller releases what waited). The state it published, if any."""
    start = period_start(budget.period, now)
    spend = budget_spend(budget, now)
    share = spend.share(budget)
    marks = (budget.reached_for, budget.warned_for)
    state = None
    if share >= 1:
        if budget.reached_for != start:
            budget.reached_for, budget.warned_for, state = start, start, REACHED
    else:
        if budget.reached_for is not None:
            budget.reached_for, state = None, RELEASED
        if share < WARN_AT:
            budget.warned_for = None  # raised: the next crossing of 80 % of it warns again
        elif budget.warned_for != start:
            budget.warned_for, state = start, state or WARNED
    if (budget.reached_for, budget.warned_for) != marks:
        budget.save(update_fields=["reached_for", "warned_for"])
    if state is not None:
        _announce(budget, state, spend, share, now=now, notify=budget.alias or notify)
    return state


def budget_announce(budget: Budget, state: str, *, now: datetime) -> None:
    """A budget_updated event for a change by its owners (SET, DELETED), with its spend now."""
    spend = budget_spend(budget, now)
    _announce(budget, state, spend, spend.share(budget), now=now, notify=None)


def _announce(budget: Budget, state: str, spend: Spend, share: float, *, now: datetime, notify: str | None) -> None:
    notice = None
    if notify and state != RELEASED:
        notice = inbox_deliver(
            network_id=budget.network_id, to_alias=notify, type=InboxMessage.Type.NOTICE,
            content=_notice_text(budget, state, spend, share, now), from_session=HUB, now=now,
        )  # fmt: skip
    publish(
        HubEvent(
            type=EventType.BUDGET_UPDATED,
            network_id=budget.network_id,
            audience=(notify,) if notice is not None and notify else (),
            payload={
                "budget_id": budget.pk,
                "alias": budget.alias or None,
                "period": budget.period,
                "state": state,
                "spent_usd": spend.usd,
                "spent_tokens": spend.tokens,
                "limit_usd": budget.limit_usd,
                "limit_tokens": budget.limit_tokens,
                "percent": round(share * 100, 1),
                "message_id": notice.id if notice is not None else None,
            },
        )
    )


def _notice_text(budget: Budget, state: str, spend: Spend, share: float, now: datetime) -> str:
    spent = [f"${spend.usd:.2f} of ${budget.limit_usd:.2f}"] if budget.limit_usd else []
    if budget.limit_tokens:
        spent.append(f"{spend.tokens} of {budget.limit_tokens} tokens")
    scope = f"to {budget.alias}" if budget.alias else "in the network"
    then = "wait" if budget.on_limit == OnLimit.HOLD else "are refused"
    turns = next_period(budget.period, now).isoformat()
    if state == REACHED:
        news = f"is spent ({round(share * 100)} %): new tasks {scope} {then} until an owner raises it or it turns"
    else:
        news = f"is {round(share * 100)} % spent: at 100 % new tasks {scope} {then}"
    return f"Budget {budget.label} ({budget.pk}) {news} ({turns}). Spent {' and '.join(spent)}."
