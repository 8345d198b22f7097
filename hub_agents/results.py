"""What the agent reads answer: plain values, rendered by each transport its own way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Row = dict[str, Any]  # a session as the contract lists it (selectors.session_row)


@dataclass(frozen=True)
class SessionListing:
    sessions: list[Row]
    summary: list[Row]  # {"status", "count"} over the whole scope, whatever the filters
    paged: bool = False  # asked for a page (limit or cursor): the answer says where the next starts
    next_cursor: str | None = None  # None: nothing after this page
