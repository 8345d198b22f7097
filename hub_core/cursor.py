"""Keyset cursors: where a paged listing stopped, as a string the caller hands back.

A cursor is the sort key of the last row sent (e.g. network, alias, id): its parts percent-encoded
and joined by `~`. It names a position, not an offset, so rows added or removed meanwhile neither
repeat nor skip others. Every string the published pattern admits is a position (the first page
after it may be empty), so a schema-valid cursor is never refused; anything else is an
`invalid_argument`, never a silent first page.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

from hub_core.errors import invalid_argument

Position = tuple[str | int, ...]

CURSOR_MAX = 1_000  # characters: a position of a few ids
SEPARATOR = "~"
_TEXT = r"[A-Za-z0-9%._-]*"  # quote()'s output, with "~" encoded too
_WHOLE = r"[0-9]{1,18}"


def pattern(shape: tuple[type, ...]) -> str:
    """The regular expression a cursor of this shape matches (published in the schemas)."""
    return "^" + SEPARATOR.join(_WHOLE if kind is int else _TEXT for kind in shape) + "$"


def encode(position: Position) -> str:
    return SEPARATOR.join(quote(str(part), safe="").replace(SEPARATOR, "%7E") for part in position)


def decode(field: str, value: object, *, shape: tuple[type, ...]) -> Position | None:
    """The position in `value` (None when left out), whose parts have the types in `shape`."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > CURSOR_MAX or not re.fullmatch(pattern(shape), value):
        raise invalid_argument(field, "must be the next_cursor of an earlier answer")
    parts = value.split(SEPARATOR)
    return tuple(int(part) if kind is int else unquote(part) for part, kind in zip(parts, shape, strict=True))
