"""The events hub_approvals publishes (hub_core.events.EventPayload)."""

from __future__ import annotations

from dataclasses import dataclass

from hub_core.events import EventPayload, EventType, Touch

_TOUCHES = (Touch("fleet", audience=True), Touch("approvals"), Touch("approvals_count"))


@dataclass(frozen=True)
class ApprovalRequested(EventPayload):
    """To the operators (and the caller's alias): a call is held for approval."""

    event_type = EventType.APPROVAL_REQUESTED
    touches = _TOUCHES

    approval_id: str
    tool: str
    summary: str
    requested_by: str
    approvals_required: int


@dataclass(frozen=True)
class ApprovalUpdated(EventPayload):
    """How a held call ended (status: pending after a yes that did not complete the tier, else
    approved, failed, rejected or expired; approvals: the yes votes so far)."""

    event_type = EventType.APPROVAL_UPDATED
    touches = _TOUCHES

    approval_id: str
    tool: str
    status: str
    approvals: int
    decided_by: str
    reason: str
