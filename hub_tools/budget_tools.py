"""Budgets (hub_fleet.budgets, hub_tasks.budgets, hub_tasks.spending): budget_set, budget_list,
budget_delete.

A budget holds the network's runs, or one agent's, to so many USD and/or tokens of reported usage a
day or a month: a warning event and notice at 80 %, and at 100 % new work for its scope waits
(list_tasks blocked) or is refused (budget_exhausted) until an owner raises it or the period turns.
Owners and admins change budgets, anyone in the network reads them."""

from __future__ import annotations

from typing import Any

from hub_fleet.budgets import budget_delete, budget_set, budgets_list
from hub_tasks import limits
from hub_tasks.models import BudgetPeriod, OnLimit
from hub_tools import args as A
from hub_tools import params as P
from hub_tools import results as R
from hub_tools.schema import result, rows
from hub_tools.tool import Tool

BUDGET = {"type": "object", "description": "The budget, as budget_list shows it (with its period's spend)."}


def _budget(row: dict[str, Any]) -> R.Fields:
    return {"budget": row}


def _budgets(found: list[dict[str, Any]]) -> R.Fields:
    return {"budgets": found}


def specs() -> list[Tool]:
    """These tools' specs."""
    changes = "Network owners and admins only; audited."
    return [
        Tool(
            name="budget_set",
            title="Set a budget",
            description=(
                "At most limit_usd and/or limit_tokens of runs' reported usage (report_completion, send_reply) "
                "per period (day or month), for the network or one agent (alias). At 80 % a warning event and "
                "notice; at 100 % new tasks for it wait (on_limit hold, list_tasks blocked) or are refused "
                "(refuse: budget_exhausted) until it is raised or the period turns. Setting a scope's budget "
                f"again replaces its limits. {changes}"
            ),
            params={
                "period": P.choice("The span it counts.", BudgetPeriod.values, required=True),
                "alias": P.identifier("The agent it counts (left out: the whole network)."),
                "limit_usd": P.number("USD per period.", low=limits.BUDGET_USD_MIN, high=limits.COST_MAX),
                "limit_tokens": P.whole("Tokens (in + out) per period.", low=1, high=limits.TOKENS_MAX),
                "on_limit": P.choice("What a spent budget does to new work.", OnLimit.values, default=OnLimit.HOLD),
                "network_id": A.NETWORK_ID,
            },
            service=budget_set,
            render=_budget,
            output=result(budget=BUDGET),
            idempotent=True,
        ),
        Tool(
            name="budget_list",
            title="List budgets",
            description=(
                "The network's budgets: limits, the period's spend (USD, tokens, percent), state (ok, warned, "
                "reached) and the tasks waiting for each."
            ),
            params={"network_id": A.NETWORK_ID},
            service=budgets_list,
            render=_budgets,
            output=result(budgets=rows("By network, alias (the network's first), then period.")),
            read_only=True,
        ),
        Tool(
            name="budget_delete",
            title="Delete a budget",
            description=f"The budget goes; what waited for it is delivered (unless another holds it). {changes}",
            params={
                "budget_id": P.identifier("The budget's id, as budget_set or budget_list answered it.", required=True)
            },
            service=budget_delete,
            render=R.deleted,
            output=result(deleted={"type": "boolean"}),
            destructive=True,
        ),
    ]
