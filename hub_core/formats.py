"""How values look on the wire, shared by every read shape."""

from __future__ import annotations

from datetime import UTC, datetime


def timestamp(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with millisecond precision: `2026-04-12T10:00:00.123Z`."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def duration(seconds: int, *, one: str = "1") -> str:
    """A span in words, in its largest whole unit: "10 minutes", "90 seconds"; a single unit is
    counted by `one`: "1 hour", "one day", or with one="" just "hour" ("a fresh hour")."""
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60), ("second", 1)):
        if seconds % size == 0:
            count = seconds // size
            return f"{one} {unit}".strip() if count == 1 else f"{count} {unit}s"
    raise AssertionError("unreachable: every whole number of seconds is a whole number of seconds")
