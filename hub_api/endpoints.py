"""REST endpoints made from the tool definitions: same arguments, same result objects.

An endpoint is a path and, per HTTP method, the tool it runs. Path segments and (for GET) the
query string supply the tool's arguments; a POST body is the JSON object of the rest. The
OpenAPI description is derived from the same tool definition, so it cannot drift from it.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from django.urls import URLPattern, path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from hub_api.auth import actor_of
from hub_core.errors import error_catalogue, invalid_argument
from hub_core.waiting import long_poll
from hub_tools.tools import TOOLS_BY_NAME, Tool
from hub_tools.webhook_tools import WEBHOOK_TOOLS

ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean", "enum": [False]},
        "error": {
            "type": "string",
            # Every declared code (each app's errors.py), so a client can tell them all apart.
            "description": f"A stable code: {', '.join(error_catalogue())}.",
        },
        "message": {"type": "string", "description": "What went wrong and what to do next."},
        "field": {"type": "string", "description": "On invalid_argument: the argument at fault."},
        "retry_after": {"type": "integer", "description": "On rate_limited: seconds to wait before writing again."},
    },
    "required": ["ok", "error", "message"],
}
ERRORS = {
    400: "Invalid argument or body; `field` names the argument.",
    401: "No token, or an unknown or revoked one.",
    403: "The token's role or network does not allow this, or the alias it names is not the token's (alias_not_yours).",
    404: "No such object in your networks.",
    409: "The object's state does not allow this (e.g. the task is terminal).",
    413: "The body is over the size limit.",
    415: "The body is not application/json.",
    429: "Too many writes from this token; `retry_after` (and the Retry-After header) says when to try again.",
}


HELD = "Held by one of the network's approval rules: the call runs once approved (list_approvals follows it)."
HELD_SCHEMA = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean", "enum": [True]},
        "pending_approval": {"type": "boolean", "enum": [True]},
        "approval_id": {"type": "string"},
        "approvals_required": {"type": "integer"},
        "expires_at": {"type": "string", "format": "date-time"},
        "message": {"type": "string"},
    },
    "required": ["ok", "pending_approval", "approval_id"],
}


@dataclass(frozen=True)
class Operation:
    method: str  # "get" or "post"
    tool: str
    created: bool = False  # answers 201 Created (200 for an idempotent repeat)
    # Arguments a literal URL stands for: GET sessions/report is the session named "report",
    # which the sessions/<alias> pattern cannot reach.
    fixed: tuple[tuple[str, str], ...] = ()
    # A created operation that has no idempotent repeat: it never answers 200.
    repeatable: bool = True
    # The answer holds a secret shown once (a webhook's): no cache may keep it.
    no_store: bool = False

    @property
    def definition(self) -> Tool:
        return operation_tool(self.tool)


def operation_tool(name: str) -> Tool:
    """The spec an endpoint runs: a tool (MCP's too), or a REST-only operation (webhooks)."""
    return TOOLS_BY_NAME[name] if name in TOOLS_BY_NAME else WEBHOOK_TOOLS[name]


def route(url: str, *operations: Operation, tag: str) -> URLPattern:
    """The URL pattern of an APIView that answers each operation's method by running its tool."""
    path_params = tuple(re.findall(r"<(?:\w+:)?(\w+)>", url))
    handlers = {
        operation.method: _described(_handler(operation), operation, path_params, tag) for operation in operations
    }
    view = type(f"{operations[0].tool.title().replace('_', '')}View", (APIView,), handlers).as_view()
    if any("wait_seconds" in operation.definition.params for operation in operations):
        view = _long_polling(view)
    return path(url, view, name=operations[0].tool)


def _long_polling(view: Any) -> Any:
    """An async face for a view whose tool may wait (get_inbox): no thread held while it waits."""

    async def waiting_view(request: Any, *args: Any, **kwargs: Any) -> Any:
        return await long_poll(lambda: view(request, *args, **kwargs))

    waiting_view.csrf_exempt = True  # as DRF's own views: SessionAuthentication checks CSRF itself
    waiting_view.cls = view.cls  # drf-spectacular finds the view's schema through it
    waiting_view.initkwargs = view.initkwargs
    return waiting_view


def _handler(operation: Operation):
    def handle(view: APIView, request: Request, **path: str) -> Response:
        tool = operation.definition
        given = _query_arguments(request, tool) if operation.method == "get" else dict(request.data)
        fixed = dict(operation.fixed)
        for name in [*path, *fixed]:
            if name in given:
                raise invalid_argument(name, "is given in the URL path; leave it out of the query and body")
        # A path segment is text, read as its argument's type like a query value (a webhook's id).
        path = {name: _typed(tool, name, value) for name, value in path.items()} | fixed
        outcome = tool.run(actor_of(request), {**given, **path})
        if outcome.get("pending_approval"):
            return Response(outcome, status=202)  # held by an approval rule: runs once approved
        created = operation.created and not outcome.get("duplicate")
        headers = {"Cache-Control": "no-store"} if operation.no_store else None
        return Response(outcome, status=201 if created else 200, headers=headers)

    return handle


# Bounded: int() of a huge digit string is slow, and any such value is out of range anyway.
_INTEGER = re.compile(r"-?[0-9]{1,30}")
_NUMBER = re.compile(r"-?[0-9]{1,30}(\.[0-9]{1,30})?([eE][+-]?[0-9]{1,3})?")  # JSON number syntax, as schemas mean it


def _query_arguments(request: Request, tool: Tool) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    for name, values in request.query_params.lists():
        if len(values) > 1:
            raise invalid_argument(name, "is given more than once")
        arguments[name] = _typed(tool, name, values[0])
    return arguments


def _typed(tool: Tool, name: str, value: str) -> Any:
    """A URL's text as the argument's JSON type: a whole number or a number where the spec says so."""
    kind = tool.params[name].kind if name in tool.params else None
    if kind == "integer":
        if not _INTEGER.fullmatch(value):
            raise invalid_argument(name, f"must be a whole number (got {value!r})")
        return int(value)
    if kind == "number":
        if not _NUMBER.fullmatch(value):
            raise invalid_argument(name, f"must be a number (got {value!r})")
        return float(value)
    return value


def _described(handle: Any, operation: Operation, path_params: tuple[str, ...], tag: str) -> Any:
    tool = operation.definition
    fixed = dict(operation.fixed)
    properties = {name: schema for name, schema in tool.input_properties.items() if name not in fixed}
    params = {name: schema for name, schema in properties.items() if name not in path_params}
    parameters = [
        OpenApiParameter(name, type=_openapi(properties[name]), location=OpenApiParameter.PATH, required=True)
        for name in path_params
    ]
    request = None
    if operation.method == "get":
        parameters += [
            OpenApiParameter(
                name,
                type=_openapi(schema),
                location=OpenApiParameter.QUERY,
                required=name in tool.required,
                description=schema.get("description", ""),
            )
            for name, schema in params.items()
        ]
    else:
        required = [name for name in tool.required if name not in path_params and name not in fixed]
        # An optional argument may be sent as null: it means "not given", as in the MCP tools.
        body = {
            "type": "object",
            "properties": {
                name: _openapi(schema) if name in required else _nullable(_openapi(schema))
                for name, schema in params.items()
            },
            "additionalProperties": False,
        }
        if required:
            body["required"] = required
        request = {"application/json": body}
    success = OpenApiResponse(response=_openapi(tool.output), description="The tool's result object.")
    responses: dict[int, Any] = {201 if operation.created else 200: success}
    if operation.created and operation.repeatable:
        responses[200] = OpenApiResponse(response=_openapi(tool.output), description="An idempotent repeat.")
    if tool.gateable:
        responses[202] = OpenApiResponse(response=HELD_SCHEMA, description=HELD)
    responses |= {status: OpenApiResponse(response=ERROR_SCHEMA, description=text) for status, text in ERRORS.items()}
    named = "".join(f" ({name} {value!r})" for name, value in fixed.items())
    return extend_schema(
        operation_id="_".join([tool.name, *fixed.values()]),
        summary=tool.title + named,
        description=tool.description + (f" This URL stands for{named}." if named else ""),
        tags=[tag],
        parameters=parameters,
        request=request,
        responses=responses,
    )(handle)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if "enum" in schema:  # OpenAPI 3.0: a nullable enum lists null among its values
        return {**schema, "nullable": True, "enum": [*schema["enum"], None]}
    return {**schema, "nullable": True}


def require_request_bodies(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular hook: a body with required arguments is itself required."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            if body and body["content"]["application/json"]["schema"].get("required"):
                body["required"] = True
    return result


# OpenAPI links: where an answer's ids lead next, so clients and fuzzers can follow a task's life.
_TASK = {"task_id": "$response.body#/task_id"}
_MESSAGE = {"alias": "$request.body#/alias", "message_id": "$response.body#/message_id"}
_WEBHOOK = {"webhook_id": "$response.body#/webhook_id"}
LINKS: dict[str, dict[str, tuple[str, dict[str, str]]]] = {
    "send_task": {
        "GetTask": ("get_task", _TASK),
        "AckTask": ("send_ack", _TASK),
        "CancelTask": ("cancel_task", _TASK),
        "ReassignTask": ("reassign_task", _TASK),
        "RetryTask": ("retry_task", _TASK),
        "AckInboxMessage": ("ack_inbox", _MESSAGE),
    },
    "send_message": {"AckInboxMessage": ("ack_inbox", _MESSAGE)},
    "retry_task": {"GetTask": ("get_task", _TASK), "CancelTask": ("cancel_task", _TASK)},
    "reassign_task": {"GetTask": ("get_task", _TASK), "CancelTask": ("cancel_task", _TASK)},
    "webhook_create": {
        "ListDeliveries": ("webhook_deliveries", _WEBHOOK),
        "DisableWebhook": ("webhook_disable", _WEBHOOK),
        "EnableWebhook": ("webhook_enable", _WEBHOOK),
        "DeleteWebhook": ("webhook_delete", _WEBHOOK),
    },
}


def link_operations(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular hook: add LINKS to each source operation's success responses."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            links = LINKS.get(operation.get("operationId", "")) if isinstance(operation, dict) else None
            for status, response in (operation.get("responses", {}) if links else {}).items():
                if status.startswith("2"):
                    response["links"] = {
                        name: {"operationId": target, "parameters": parameters}
                        for name, (target, parameters) in links.items()
                    }
    return result


def _openapi(schema: Any) -> Any:
    """JSON Schema as OpenAPI 3.0 wants it: `{"type": [T, "null"]}` becomes `nullable`."""
    if isinstance(schema, list):
        return [_openapi(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {key: _openapi(value) for key, value in copy.deepcopy(schema).items()}
    kind = converted.get("type")
    if isinstance(kind, list) and "null" in kind:
        (converted["type"],) = [item for item in kind if item != "null"]
        converted["nullable"] = True
    return converted
