"""A task's steps as the task tests take them over and over, through the tools (tests/helpers/calls.py):
the coder takes a task from its inbox and replies to it; an inbox's messages; the broadcasts sent."""

from __future__ import annotations

from typing import Any

from hub_agents.actors import Actor
from hub_tasks.models import InboxMessage
from tests.helpers.calls import ack_inbox, get_inbox, send_reply


def take(actor: Actor, task_id: str, alias: str = "coder") -> dict[str, Any]:
    """`alias` fetches its inbox and acks the task's message, as an agent does; the message."""
    (message,) = [m for m in get_inbox(actor=actor, alias=alias)["messages"] if m["task_id"] == task_id]
    ack_inbox(actor=actor, alias=alias, message_id=message["id"])
    return message


def reply(actor: Actor, task_id: str, status: str = "replied") -> None:
    """The coder replies "done" to lead's task with `status`."""
    send_reply(actor=actor, alias="lead", text="done", in_reply_to=task_id, status=status, from_session="coder")


def pending(actor: Actor, alias: str) -> list[dict[str, Any]]:
    """The messages waiting in `alias`'s inbox (up to 100)."""
    return get_inbox(actor=actor, alias=alias, limit=100)["messages"]


def broadcasts() -> int:
    """How many broadcast messages the inboxes hold (one per receiving alias)."""
    return InboxMessage.objects.filter(type=InboxMessage.Type.BROADCAST).count()
