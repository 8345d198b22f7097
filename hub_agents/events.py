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


@dataclass(frozen=True)
class NodeCommandSent(EventPayload):
    """To a node, through the feeds of the agents it hosts (node_command): do this, then answer with
    node_command_ack. alias: the agent it is for (none: the node); value: set_concurrency's tasks or
    tail's lines."""

    event_type = EventType.NODE_COMMAND
    touches = (Touch("fleet", audience=True), Touch("nodes"))

    command_id: str
    node_id: str
    kind: str
    alias: str | None
    task_id: str | None
    value: int | None


@dataclass(frozen=True)
class NodeCommandUpdated(EventPayload):
    """To the operators: a command was answered (done, failed with the node's reason) or expired."""

    event_type = EventType.NODE_COMMAND_UPDATED
    touches = (Touch("fleet", keys=("alias",)), Touch("nodes"))

    command_id: str
    node_id: str
    kind: str
    alias: str | None
    status: str
    reason: str | None
