"""Small builders for the flat JSON Schemas of tool inputs and outputs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Text may hold anything but NUL (PostgreSQL cannot store it); required text must not be blank.
from hub_core.validate import NO_NUL, NOT_BLANK, STRING_ARRAY_JSON

Schema = dict[str, Any]


def string(
    description: str,
    *,
    max_length: int | None = None,
    enum: Iterable[str] | None = None,
    format: str | None = None,
) -> Schema:
    schema: Schema = {"type": "string", "description": description}
    if max_length is not None:
        schema["maxLength"] = max_length
    if enum is not None:
        schema["enum"] = list(enum)
    elif format is not None:
        schema["format"] = format
    else:
        schema["pattern"] = NO_NUL
    return schema


def required_string(schema: Schema) -> Schema:
    """The same text argument, required: at least one character that is not white space."""
    if schema.get("type") != "string" or "pattern" not in schema:
        return schema
    return {**schema, "minLength": 1, "pattern": NOT_BLANK}


def integer(description: str, *, minimum: int, maximum: int, default: int | None = None) -> Schema:
    schema: Schema = {"type": "integer", "description": description, "minimum": minimum, "maximum": maximum}
    if default is not None:
        schema["default"] = default
    return schema


def number(description: str, *, minimum: float, maximum: float) -> Schema:
    return {"type": "number", "description": description, "minimum": minimum, "maximum": maximum}


def string_list(description: str, *, max_items: int, max_length: int) -> Schema:
    return {
        "type": "array",
        "description": description,
        "maxItems": max_items,
        "items": required_string(string("", max_length=max_length)) | {"description": "non-blank text"},
    }


def json_string_array(description: str, *, max_length: int) -> Schema:
    return {"type": "string", "description": description, "maxLength": max_length, "pattern": STRING_ARRAY_JSON}


def nullable(type_: str) -> Schema:
    return {"type": [type_, "null"]}


def rows(description: str) -> Schema:
    return {"type": "array", "description": description, "items": {"type": "object"}}


def counts(description: str) -> Schema:
    return {
        "type": "array",
        "description": description,
        "items": {
            "type": "object",
            "properties": {"status": {"type": "string"}, "count": {"type": "integer"}},
            "required": ["status", "count"],
        },
    }


# Every result may be a refusal: {"ok": false, "error": ..., "code": ..., "message": ...}.
_REFUSAL: dict[str, Schema] = {
    "ok": {"type": "boolean", "description": "true when the call did what it was asked"},
    "error": {"type": "string", "description": "on refusal: what went wrong, in the contract's words"},
    "code": {"type": "string", "description": "on refusal: a stable machine code"},
    "message": {"type": "string", "description": "on refusal: what to do next"},
    "field": {"type": "string", "description": "on a bad argument: the argument's name"},
    "warning": {"type": "string", "description": "something worth knowing that did not stop the call"},
}


def result(**properties: Schema) -> Schema:
    return {"type": "object", "properties": {**_REFUSAL, **properties}, "required": ["ok"]}


# --- the MCP catalogue: compact ------------------------------------------------------------------
# tools/list reaches every agent's context before it does anything, so it says each rule once: the
# rules every text argument shares are in the MCP server instructions (SAID_ONCE), not in a pattern on
# each of them, and so is the refusal shape every result shares. The specs keep them all, and the
# OpenAPI schema (hub_api) publishes them whole; every call is checked against them (Tool.execute).

SAID_ONCE = (
    "Text arguments never hold NUL; a required one must not be blank; an unknown argument is refused. "
    'Every result is a JSON object whose "ok" says whether the call worked; on false, "error" says why, '
    '"code" is a stable machine code, "message" says what to do next and "field" names a bad argument; '
    '"warning", when present, is something worth knowing that did not stop the call.'
)
_SAID_ONCE_PATTERNS = frozenset({NO_NUL, NOT_BLANK, STRING_ARRAY_JSON})


def compact_input(schema: Schema, *, describe: bool = True) -> Schema:
    """An argument's schema as tools/list publishes it: every limit but the patterns said once."""
    compact: Schema = {}
    for key, value in schema.items():
        if key == "pattern" and value in _SAID_ONCE_PATTERNS:
            continue
        if key == "description" and not (describe and value):
            continue
        if key == "items":
            compact[key] = compact_input(value, describe=False)
        elif key == "properties":  # an object's fields (hub_tools.params.records): their limits, no more
            compact[key] = {name: compact_input(field, describe=False) for name, field in value.items()}
        else:
            compact[key] = value
    return compact


def compact_output(schema: Schema) -> Schema:
    """A result's schema as tools/list publishes it: the types of what the tool answers, `ok` first,
    without the refusal fields every result shares (said once) or descriptions."""
    own = {name: _types(value) for name, value in schema["properties"].items() if name not in _REFUSAL}
    return {**schema, "properties": {"ok": {"type": "boolean"}, **own}}


def _types(schema: Schema) -> Schema:
    """A schema without its descriptions (keys named "description" among `properties` are fields, kept)."""
    bare: Schema = {}
    for key, value in schema.items():
        if key == "description":
            continue
        if key == "properties":
            bare[key] = {name: _types(field) for name, field in value.items()}
        elif key == "items" and isinstance(value, dict):
            bare[key] = _types(value)
        else:
            bare[key] = value
    return bare
