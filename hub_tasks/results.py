"""What the task services and selectors answer: plain values, rendered by each transport its own way
(hub_tools renders the contract's result objects, the dashboard its messages)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Row = dict[str, Any]  # a record as the contract lists it (Task.as_row, InboxMessage.as_row, ...)


@dataclass(frozen=True)
class Delivery:
    """A message put in an inbox, and what the receiver's session says now (None: never reported)."""

    message_id: str
    session_status: str | None
    warning: str | None = None


@dataclass(frozen=True)
class TaskSent:
    task_id: str
    delivery: Delivery
    duplicate: bool = False  # a repeated client_request_id: the first send's task


@dataclass(frozen=True)
class TaskAcked:
    task_id: str
    updated: int  # 1 if this call acknowledged it, 0 if it already was


@dataclass(frozen=True)
class TaskRetried:
    task_id: str
    retried_to: str
    message_id: str


@dataclass(frozen=True)
class TaskReassigned:
    task_id: str
    reassigned_from: str
    reassigned_to: str
    delivery: Delivery


@dataclass(frozen=True)
class CompletionRecorded:
    completion_id: str
    task_id: str | None  # the task it closed, if one matched
    warning: str | None = None


@dataclass(frozen=True)
class TaskHistory:
    task: Row
    events: list[Row]
    attempts: list[Row]
    questions: list[Row]  # asked of a person about it (ask_operator), oldest first


@dataclass(frozen=True)
class TaskListing:
    tasks: list[Row]
    stats: list[Row]  # every task in scope by status, whatever the filters


@dataclass(frozen=True)
class QuestionAsked:
    question_id: str
    task_id: str


@dataclass(frozen=True)
class QuestionAnswered:
    question_id: str
    task_id: str
    message_id: str  # the answer's row in the asking agent's inbox
