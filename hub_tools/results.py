"""The contract's result objects, from what the services and selectors answer.

Each function renders one tool's success as the fields after `"ok": true` (`Tool.run` adds that);
MCP returns the object as the tool result and REST as the response body.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hub_agents.results import SessionListing
from hub_approvals.services import Held
from hub_core.formats import timestamp
from hub_fleet.results import TaskClaimed
from hub_tasks.models import Task
from hub_tasks.results import (
    CompletionRecorded,
    Delivery,
    Row,
    TaskListing,
    TaskReassigned,
    TaskSent,
)

Fields = dict[str, Any]


def as_fields(result: Any) -> Fields:
    """A result whose fields are the result object's own, as they are (Heartbeat, TaskAcked, ...)."""
    return {field.name: getattr(result, field.name) for field in dataclasses.fields(result)}


def delivered(delivery: Delivery) -> Fields:
    fields: Fields = {"message_id": delivery.message_id, "session_status": delivery.session_status}
    if delivery.warning is not None:
        fields["warning"] = delivery.warning
    return fields


def task_sent(sent: TaskSent) -> Fields:
    fields = {**delivered(sent.delivery), "task_id": sent.task_id}
    if sent.duplicate:
        fields["duplicate"] = True
    return fields


def completion_recorded(recorded: CompletionRecorded) -> Fields:
    fields: Fields = {"completion_id": recorded.completion_id, "task_id": recorded.task_id}
    if recorded.warning is not None:
        fields["warning"] = recorded.warning
    return fields


def acknowledged(_: None) -> Fields:
    return {}


def deleted(_: None) -> Fields:
    """A *_delete tool's success (caps, budgets, schedules)."""
    return {"deleted": True}


def task_cancelled(task: Task) -> Fields:
    return {"task_id": task.task_id, "cancelled": True}


def task_reassigned(moved: TaskReassigned) -> Fields:
    return {
        "task_id": moved.task_id,
        "reassigned_from": moved.reassigned_from,
        "reassigned_to": moved.reassigned_to,
        **delivered(moved.delivery),
    }


def broadcast_sent(message_ids: list[str]) -> Fields:
    return {"recipients": len(message_ids), "message_ids": message_ids}


def inbox(messages: list[Row]) -> Fields:
    return {"messages": messages}


def task_listing(listing: TaskListing) -> Fields:
    return {"tasks": listing.tasks, "count": len(listing.tasks), "stats": listing.stats}


def completions(rows: list[Row]) -> Fields:
    return {"completions": rows}


def session_listing(listing: SessionListing) -> Fields:
    fields: Fields = {"sessions": listing.sessions, "summary": listing.summary}
    if listing.paged:  # a call without limit or cursor is answered exactly as the contract's
        fields["next_cursor"] = listing.next_cursor
    return fields


def agents_found(agents: list[Row]) -> Fields:
    return {"agents": agents}


def open_tasks(tasks: list[Row]) -> Fields:
    return {"tasks": tasks}


def task_claimed(claimed: TaskClaimed) -> Fields:
    lease = claimed.lease_expires_at
    return {
        "task_id": claimed.task_id,
        "claimed_by": claimed.claimed_by,
        "lease_expires_at": lease and timestamp(lease),
    }


def questions(rows: list[Row]) -> Fields:
    return {"questions": rows}


def held(call: Held) -> Fields:
    """A call an approval rule holds: it runs once approved (list_approvals follows it)."""
    return {
        "pending_approval": True,
        "approval_id": call.approval_id,
        "approvals_required": call.approvals_required,
        "expires_at": call.expires_at,
        "message": (
            f"Held for approval by the rule {call.rule!r}: it runs once {call.approvals_required} approver"
            f"{'s' if call.approvals_required > 1 else ''} say yes. Follow it with list_approvals(approval_id="
            f"{call.approval_id!r})"
            + (f"; {call.notify_alias} is told the outcome in its inbox." if call.notify_alias else ".")
        ),
    }


def approvals(rows: list[Row]) -> Fields:
    return {"approvals": rows}


def thread(entries: list[Row]) -> Fields:
    return {"task_id": entries[0]["id"], "entries": entries}
