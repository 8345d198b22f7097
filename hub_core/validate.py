"""Argument parsers: the contract's checks, with its wording, for every edge that reads a raw value.

Each takes the field's name and its raw value (decoded JSON, a form or query field) and returns the
clean value, or raises an `invalid_argument` HubError whose text names the field and the limit. The
tool specs (hub_tools.params) pair each with the JSON Schema it publishes; SSE's query string and
the admin's forms use them directly. Services receive what these return.
"""

from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Iterable
from datetime import UTC, datetime

from django.utils.dateparse import parse_datetime

from hub_core.errors import invalid_argument, unusable_argument

ID_MAX = 200  # aliases, resume ids, sender names, node ids, network ids, task ids
TEXT_MAX = 10_000  # free text: a task, its context, a message, a reply, a session's task
MOMENT_MAX = 64  # an ISO 8601 time

# White space as JSON Schema (ECMA-262 `\s`) defines it, spelled out so that the published schema
# patterns and these checks agree whatever regex engine a client validates with.
SPACE_CLASS = r"\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
NO_NUL = r"^[^\u0000]*$"
NOT_BLANK = rf"^[^\u0000]*[^{SPACE_CLASS}\u0000][^\u0000]*$"
_BLANK = re.compile(rf"[{SPACE_CLASS}]*")
_SURROGATE = re.compile(r"[\ud800-\udfff]")  # JSON's "\ud800" escape decodes to one; UTF-8 cannot hold it


def text(field: str, value: object, *, max_len: int, required: bool = False) -> str | None:
    if value is None or (value == "" and not required):
        if required:
            raise invalid_argument(field, "is required", kind="required")
        return None
    if not isinstance(value, str):
        raise invalid_argument(field, f"must be a string, not {type(value).__name__}")
    if required and _BLANK.fullmatch(value):
        raise invalid_argument(field, "must not be empty", kind="empty")
    if len(value) > max_len:
        raise invalid_argument(
            field, f"is longer than {max_len} characters ({len(value)})", kind="too_long", max=max_len
        )
    if "\x00" in value:
        raise invalid_argument(field, "contains a NUL character", kind="not_text")
    if _SURROGATE.search(value):
        raise invalid_argument(field, "contains a lone UTF-16 surrogate, which is not text", kind="not_text")
    return value


def required_text(field: str, value: object, *, max_len: int) -> str:
    result = text(field, value, max_len=max_len, required=True)
    assert result is not None
    return result


def identifier(field: str, value: object, *, required: bool = False) -> str | None:
    return text(field, value, max_len=ID_MAX, required=required)


def required_identifier(field: str, value: object) -> str:
    return required_text(field, value, max_len=ID_MAX)


_QUOTE = reprlib.Repr()
_QUOTE.maxlevel, _QUOTE.maxstring, _QUOTE.maxother, _QUOTE.maxlist, _QUOTE.maxdict = 2, 80, 80, 5, 5


def shown(value: object) -> str:
    """A client's value quoted in an error message: bounded, however large or deeply nested."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    if isinstance(value, float):
        return f"{value:g}"
    return _QUOTE.repr(value)


def number(field: str, value: object, *, low: float, high: float | None = None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid_argument(field, f"must be a number, not {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise invalid_argument(field, "must be a finite number")
    if value < low or (high is not None and value > high):
        bound = f"between {low:g} and {high:g}" if high is not None else f"at least {low:g}"
        raise invalid_argument(field, f"must be {bound} (got {shown(value)})")
    return float(value)


def whole_number(field: str, value: object, *, low: int, high: int, default: int | None = None) -> int | None:
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid_argument(field, f"must be a whole number, not {type(value).__name__}")
    if not low <= value <= high:
        raise invalid_argument(field, f"must be between {low} and {high} (got {shown(value)})")
    return value


def choice(field: str, value: object, choices: Iterable[str], *, default: str | None = None) -> str | None:
    if value is None:
        return default
    allowed = list(choices)
    if value not in allowed:
        raise invalid_argument(
            field, f"must be one of {', '.join(allowed)} (got {shown(value)})", kind="not_one_of", choices=allowed
        )
    return str(value)


def string_list(field: str, value: object, *, max_items: int, max_len: int, unique: bool = False) -> list[str] | None:
    """A list of texts; `unique`: each may appear once (the schema's uniqueItems)."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise invalid_argument(field, f"must be a list of strings, not {type(value).__name__}")
    if len(value) > max_items:
        raise invalid_argument(field, f"has more than {max_items} items ({len(value)})")
    items = [required_text(f"{field}[{index}]", item, max_len=max_len) for index, item in enumerate(value)]
    if unique and len(set(items)) != len(items):
        repeated = next(item for item in items if items.count(item) > 1)
        raise invalid_argument(field, f"names {shown(repeated)} twice; name each once")
    return items


def tag_list(field: str, value: object, *, max_items: int, max_len: int, pattern: str) -> list[str] | None:
    """A list of distinct short tags, each matching `pattern` (skills)."""
    tags = string_list(field, value, max_items=max_items, max_len=max_len, unique=True)
    if tags is None:
        return None
    for index, tag in enumerate(tags):
        if not re.fullmatch(pattern, tag):
            raise invalid_argument(
                f"{field}[{index}]", f"must be a short lower-case tag like python or code-review (got {shown(tag)})"
            )
    return tags


# A JSON array of plain strings (no escapes or control characters): every string that matches is
# valid JSON, so the pattern can be published in the API schema and checked here alike. Each
# alternative has one flat repetition, which every schema-driven generator can handle.
_WS, _STRING = r"[ \t\n\r]*", r'"[^"\\\u0000-\u001f]*"'
STRING_ARRAY_JSON = (
    "^$"  # left out
    rf"|^{_WS}\[{_WS}\]{_WS}$"  # []
    rf"|^{_WS}\[{_WS}({_STRING}{_WS},{_WS})*{_STRING}{_WS}\]{_WS}$"  # ["a", "b"]
)
_STRING_ARRAY_JSON = re.compile(STRING_ARRAY_JSON)


def json_string_list(field: str, value: object, *, max_len: int) -> str | None:
    """A JSON array of strings, kept as the string the caller sent."""
    raw = text(field, value, max_len=max_len)
    if raw is not None and not _STRING_ARRAY_JSON.fullmatch(raw):
        raise invalid_argument(field, 'must be a JSON array of strings, e.g. ["general"]')
    return raw


def moment(field: str, value: object) -> datetime | None:
    if value == "":
        raise invalid_argument(field, "must be an ISO 8601 time such as 2026-04-12T10:00:00Z, or left out")
    raw = text(field, value, max_len=MOMENT_MAX)
    if raw is None:
        return None
    try:
        parsed = parse_datetime(raw.replace("Z", "+00:00"))
    except ValueError:
        parsed = None
    if parsed is None:
        raise invalid_argument(field, f"must be an ISO 8601 time such as 2026-04-12T10:00:00Z (got {raw!r})")
    if parsed.tzinfo is None:  # an offset-less time is read as UTC
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # a date-time the schema admits (RFC 3339): 409, not 400
        raise unusable_argument(field, f"is outside the calendar once in UTC (got {raw!r})") from None
