"""What the fleet's reads and writes answer: plain values, rendered by each transport its own way."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

Row = dict[str, Any]


@dataclass(frozen=True)
class Heartbeat:
    resume_id: str
    alias: str
    inbox_count: int  # messages waiting for the alias


@dataclass(frozen=True)
class SessionDetail:
    session: Row | None  # None: that alias never reported
    inbox_pending: int
    recent_completions: list[Row]


@dataclass(frozen=True)
class TaskClaimed:
    task_id: str
    claimed_by: str
    lease_expires_at: datetime | None  # None: the task has no lease
