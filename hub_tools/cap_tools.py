"""Concurrency caps (hub_fleet.caps, hub_tasks.caps): cap_set, cap_list, cap_delete.

A cap holds at most `limit` tasks of a scope with their agents at once in a network: all runs, the
runs of one runtime (as the agent's node reports it) or of one skill (a task's required_skills).
Work beyond it waits (list_tasks blocked) and is released by priority then age as runs end. Owners
and admins change caps, anyone in the network reads them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hub_fleet.caps import cap_delete, cap_set, caps_list
from hub_tasks.models import CapScope
from hub_tools import args as A
from hub_tools import params as P
from hub_tools import results as R
from hub_tools.schema import result, rows
from hub_tools.tool import Tool

CAP = {"type": "object", "description": "The cap, as cap_list shows it (with its slots used now)."}
LIMIT_MAX = 100_000


def _cap(row: dict[str, Any]) -> R.Fields:
    return {"cap": row}


def _caps(found: list[dict[str, Any]]) -> R.Fields:
    return {"caps": found}


def specs() -> list[Tool]:
    """These tools' specs."""
    changes = "Network owners and admins only; audited."
    return [
        Tool(
            name="cap_set",
            title="Set a concurrency cap",
            description=(
                "At most limit tasks of a scope with their agents (delivered, acked or running) at once in the "
                "network: scope all (every run), runtime (value: claude, codex, command, as the agent's node "
                "reports it) or skill (value: a skill tasks require). Work beyond it waits, shown by list_tasks "
                "blocked, and is delivered by priority then age as runs end; claim_task of an open task beyond "
                f"it is refused (cap_full). Setting a scope's cap again changes its limit. {changes}"
            ),
            params={
                "scope": P.choice("What the cap counts.", CapScope.values, required=True),
                "value": P.identifier("The runtime or the skill (not with scope all)."),
                "limit": replace(P.whole("Tasks of the scope at once.", low=1, high=LIMIT_MAX), required=True),
                "network_id": A.NETWORK_ID,
            },
            service=cap_set,
            render=_cap,
            output=result(cap=CAP),
            idempotent=True,
        ),
        Tool(
            name="cap_list",
            title="List concurrency caps",
            description="The network's caps: scope, value, limit, the slots used now and the tasks waiting for one.",
            params={"network_id": A.NETWORK_ID},
            service=caps_list,
            render=_caps,
            output=result(caps=rows("By network, scope, then value.")),
            read_only=True,
        ),
        Tool(
            name="cap_delete",
            title="Delete a concurrency cap",
            description=(
                "The cap goes; the tasks waiting for its slots are delivered (unless another cap holds them). "
                f"{changes}"
            ),
            params={"cap_id": P.identifier("The cap's id, as cap_set or cap_list answered it.", required=True)},
            service=cap_delete,
            render=R.deleted,
            output=result(deleted={"type": "boolean"}),
            destructive=True,
        ),
    ]
