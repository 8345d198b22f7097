"""A tool's arguments: each one's JSON Schema and its parser, built from the same statement of its limit.

The schema is what MCP's inputSchema and the OpenAPI description publish; the parser is what
`Tool.run` applies to the raw value before any service sees it (hub_core.validate's checks, so the
contract's wording holds). A limit given once here reaches both, so they cannot disagree. A parser
takes the argument's name and its raw JSON value (None when left out) and returns the clean value or
raises `invalid_argument`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from hub_core import cursor as keyset
from hub_core import validate
from hub_core.errors import invalid_argument, unusable_argument
from hub_tools import schema
from hub_tools.schema import Schema

Parser = Callable[[str, object], Any]


@dataclass(frozen=True)
class Param:
    schema: Schema
    parse: Parser
    required: bool = False
    # An argument many tools share (hub_tools.args): the MCP server instructions describe it once and
    # tools/list leaves its description out; the OpenAPI schema keeps it on every operation.
    said_once: bool = False

    @property
    def kind(self) -> str:
        """The JSON type a query string's text is read as (REST GET)."""
        return self.schema.get("type", "string")


def text(description: str, max_len: int | None = None, *, required: bool = False) -> Param:
    """Free text, at most `max_len` characters (default validate.TEXT_MAX, read when the spec is built)."""
    max_len = validate.TEXT_MAX if max_len is None else max_len
    published = schema.string(description, max_length=max_len)
    if required:
        return Param(schema.required_string(published), partial(validate.required_text, max_len=max_len), True)
    return Param(published, partial(validate.text, max_len=max_len))


def identifier(description: str, *, required: bool = False) -> Param:
    """An alias, an id or a name: text of at most validate.ID_MAX characters."""
    return text(description, validate.ID_MAX, required=required)


def choice(description: str, values: Sequence[str], *, default: str | None = None, required: bool = False) -> Param:
    allowed = list(values)

    def parse(name: str, value: object) -> str | None:
        if required and value is None:
            raise invalid_argument(name, f"is required, one of {', '.join(allowed)}", kind="required", choices=allowed)
        return validate.choice(name, value, allowed, default=default)

    return Param(schema.string(description, enum=allowed), parse, required)


def number(description: str, *, low: float, high: float) -> Param:
    return Param(schema.number(description, minimum=low, maximum=high), partial(validate.number, low=low, high=high))


def whole(description: str, *, low: int, high: int, default: int | None = None) -> Param:
    return Param(
        schema.integer(description, minimum=low, maximum=high, default=default),
        partial(validate.whole_number, low=low, high=high, default=default),
    )


def text_list(description: str, *, max_items: int, max_len: int, unique: bool = False) -> Param:
    """A list of texts; `unique`: each may appear once (the schema says so, the parser checks it)."""
    published = schema.string_list(description, max_items=max_items, max_length=max_len)
    return Param(
        {**published, "uniqueItems": True} if unique else published,
        partial(validate.string_list, max_items=max_items, max_len=max_len, unique=unique),
    )


def tags(description: str, *, max_items: int, max_len: int, pattern: str) -> Param:
    """Distinct short tags (skills), each matching `pattern`: the schema says so, the parser checks it."""
    published = schema.string_list(description, max_items=max_items, max_length=max_len)
    items = {
        "type": "string",
        "description": "a lower-case tag",
        "minLength": 1,
        "maxLength": max_len,
        "pattern": pattern,
    }
    return Param(
        {**published, "items": items, "uniqueItems": True},
        partial(validate.tag_list, max_items=max_items, max_len=max_len, pattern=pattern),
    )


def json_text_list(description: str, *, max_len: int) -> Param:
    """A JSON array of strings, kept as the string the caller sent (report_status `channels`)."""
    return Param(
        schema.json_string_array(description, max_length=max_len),
        partial(validate.json_string_list, max_len=max_len),
    )


def moment(description: str) -> Param:
    return Param(schema.string(description, max_length=validate.MOMENT_MAX, format="date-time"), validate.moment)


def cursor(description: str, *, shape: tuple[type, ...]) -> Param:
    """Where the previous page stopped: the `next_cursor` it answered (hub_core.cursor)."""
    published = {**schema.string(description, max_length=keyset.CURSOR_MAX), "pattern": keyset.pattern(shape)}
    return Param(published, partial(keyset.decode, shape=shape))


def flag(description: str) -> Param:
    """true or false (a REST query string's "true"/"false" too); left out: false."""

    def parse(name: str, value: object) -> bool:
        if value is None:
            return False
        if isinstance(value, bool):
            return value
        if value in ("true", "false"):
            return value == "true"
        raise invalid_argument(name, f"must be true or false (got {validate.shown(value)})")

    return Param({"type": "boolean", "description": description}, parse)


def records(description: str, fields: dict[str, Param], *, max_items: int, unique_by: str | None = None) -> Param:
    """A list of objects, each with `fields` (a Param each: its schema and its parser, as a tool's
    arguments; the required ones must be there, no other key may be). `unique_by`: a field no two
    objects may share. A field left out of an object is left out of the parsed one too."""
    required = [name for name, field in fields.items() if field.required]
    item = {
        "type": "object",
        "properties": {name: field.schema for name, field in fields.items()},
        "required": required,
        "additionalProperties": False,
    }
    published = {"type": "array", "description": description, "maxItems": max_items, "items": item}

    def parse(name: str, value: object) -> list[dict[str, Any]] | None:
        if value is None:
            return None
        if not isinstance(value, list):
            raise invalid_argument(name, f"must be a list of objects, not {type(value).__name__}")
        if len(value) > max_items:
            raise invalid_argument(name, f"has more than {max_items} items ({len(value)})")
        parsed = [_record(f"{name}[{index}]", raw, fields, required) for index, raw in enumerate(value)]
        if unique_by is not None:
            seen: set[object] = set()
            for record in parsed:
                if record[unique_by] in seen:
                    shown = validate.shown(record[unique_by])
                    # JSON Schema cannot say "unique by a field": the schema admits it, so 409, not 400.
                    raise unusable_argument(name, f"has two items with {unique_by} {shown}; list each once")
                seen.add(record[unique_by])
        return parsed

    return Param(published, parse)


def _record(name: str, value: object, fields: dict[str, Param], required: list[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid_argument(name, f"must be an object, not {type(value).__name__}")
    unknown = sorted(set(value) - set(fields))
    if unknown:
        shown = validate.shown(unknown[0])
        raise invalid_argument(name, f"has no field {shown} (its fields: {', '.join(fields)})")
    missing = [field for field in required if value.get(field) is None]
    if missing:
        raise invalid_argument(f"{name}.{missing[0]}", "is required", kind="required")
    return {field: fields[field].parse(f"{name}.{field}", value[field]) for field in fields if field in value}
