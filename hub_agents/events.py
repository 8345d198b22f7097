"""The events hub_agents publishes (hub_core.events.EventPayload): fields in their wire order, and
the dashboard regions each touches."""

from __future__ import annotations

from dataclasses import dataclass

from hub_core.events import EventPayload, EventType, Touch


@dataclass(frozen=True)
class SessionUpdated(EventPayload):
    """An agent reported itself (report_status) or went idle: its fleet card, and the page of the
    task it says it works on."""

    event_type = EventType.SESSION_UPDATED
    touches = (Touch("fleet", keys=("alias",), audience=True), Touch("task", subject=("task",)))

    alias: str
    resume_id: str
    status: str
    task: str | None
    progress: float | None


@dataclass(frozen=True)
class NodeUpdated(EventPayload):
    """To the operators: a node (`commhub-agent node`) reported itself (report_node); linked: the
    aliases whose sessions it moved onto this node (their fleet cards change)."""

    event_type = EventType.NODE_UPDATED
    touches = (Touch("fleet", keys=("linked",), audience=True), Touch("nodes"))

    node_id: str
    node_name: str | None
    slots_total: int | None
    slots_used: int | None
    linked: list[str]
