"""How values look on the wire, shared by every read shape."""

from __future__ import annotations

from datetime import UTC, datetime


def timestamp(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with millisecond precision: `2026-04-12T10:00:00.123Z`."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
