"""Budgets as the dashboard shows them: the Limits page's table and form (hub_dashboard.limits), the
strip of the network's budgets on the Nodes and fleet pages, and each agent's own budget on its row
or card. One budget_list read per page (the same door as MCP's and REST's), grouped by scope here.

Each row gains what its templates need and budget_list does not say in words: its scope's name, a
meter per limit (spent of limit, and the share of it as a bar's width) and the bar of the larger share.
"""

from __future__ import annotations

from typing import Any

from hub_agents.actors import Actor
from hub_tools.tools import invoke

PERIODS = {"day": ("a day", "resets at midnight"), "month": ("a month", "resets on the 1st")}
HOLDS = {"hold": "new tasks wait", "refuse": "new tasks are refused"}


def usd(amount: float) -> str:
    """Dollars with cents; a fraction of a cent keeps four places, so a small spend is not "$0.00"."""
    return f"${amount:,.2f}" if amount == 0 or amount >= 0.01 else f"${amount:.4f}"


def _share(spent: float, limit: float) -> float:
    return min(100.0, max(0.0, 100 * spent / limit)) if limit else 0.0


def budget_shown(row: dict[str, Any]) -> dict[str, Any]:
    """One budget_list row with its scope's name, its meters (USD, tokens: those it limits) and its
    bar's width."""
    meters = []
    if row["limit_usd"] is not None:
        meters.append(
            {
                "unit": "USD",
                "spent": usd(row["spent_usd"]),
                "limit": usd(row["limit_usd"]),
                "width": _share(row["spent_usd"], row["limit_usd"]),
            }
        )
    if row["limit_tokens"] is not None:
        meters.append(
            {
                "unit": "tokens",
                "spent": f"{row['spent_tokens']:,}",
                "limit": f"{row['limit_tokens']:,}",
                "width": _share(row["spent_tokens"], row["limit_tokens"]),
            }
        )
    spent = [f"{m['spent']} of {m['limit']}" + (" tokens" if m["unit"] == "tokens" else "") for m in meters]
    per, turns = PERIODS.get(row["period"], (row["period"], ""))
    return {
        **row,
        "scope_name": f"agent {row['alias']}" if row["alias"] else "the network",
        "per": per,
        "turns": turns,
        "holds": HOLDS.get(row["on_limit"], row["on_limit"]),
        "meters": meters,
        "spent_text": " and ".join(spent),
        "width": min(100.0, row["percent"]),
    }


def budgets_shown(actor: Actor, network_id: str) -> list[dict[str, Any]]:
    """The network's budgets as the dashboard shows them, the network's first."""
    return [budget_shown(row) for row in invoke("budget_list", actor, {"network_id": network_id})]


def budgets_by_scope(actor: Actor, network_id: str) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """The network's own budgets, and each agent's by its alias: one read for a whole page."""
    network: list[dict[str, Any]] = []
    agents: dict[str, list[dict[str, Any]]] = {}
    for row in budgets_shown(actor, network_id):
        if row["alias"]:
            agents.setdefault(row["alias"], []).append(row)
        else:
            network.append(row)
    return network, agents
