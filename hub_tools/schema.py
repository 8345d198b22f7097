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
