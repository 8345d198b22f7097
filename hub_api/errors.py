"""Every API refusal in one shape: {"ok": false, "error": "<code>", "message": "<what to do>", ...}.

On REST `error` is always the machine code (`task_not_found`, `invalid_argument`, `rate_limited`),
as README "REST API" promises; the refusal's extra fields (`field`, `retry_after`, ...) follow.
The MCP tools' wording of `error` ("task not found", HubError.error) belongs to the tool contract
and is rendered by the tool layer, never here. `refusal` below is the one place REST builds it.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.response import Response

from hub_core.errors import HubError, codes_declare

# REST's own codes (the domain's come from the apps' errors.py, through HubError).
codes_declare(
    __name__,
    {
        "invalid_json": (400, "The body is not valid JSON."),
        "unsupported_media_type": (415, "The body is not application/json."),
        "method_not_allowed": (405, "The endpoint does not take this HTTP method."),
        "not_acceptable": (406, "The endpoint cannot answer in the media type the Accept header asks for."),
        "not_found": (404, "No such endpoint (or object) under /api/v1/."),
        "internal_error": (500, "The hub failed on the request; it has been logged."),
    },
)

# DRF's own refusals, under the codes CommHub uses everywhere else.
_CODES: dict[type[exceptions.APIException], str] = {
    exceptions.NotAuthenticated: "unauthorized",
    exceptions.AuthenticationFailed: "unauthorized",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.ParseError: "invalid_json",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.NotFound: "not_found",
    exceptions.Throttled: "rate_limited",
    exceptions.ValidationError: "invalid_argument",
}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, HubError):
        retry_after = exc.extra.get("retry_after")
        return Response(
            refusal(exc.code, exc.message, **exc.extra),
            status=exc.status,
            headers={"Retry-After": str(retry_after)} if retry_after else None,
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    if not isinstance(exc, exceptions.APIException):
        return None  # a bug, not a refusal: Django logs it and answers 500
    code = next((code for kind, code in _CODES.items() if isinstance(exc, kind)), exc.default_code)
    body = refusal(code, _text(exc.detail))
    headers = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None) is not None:
        headers["Retry-After"] = str(int(exc.wait))
        body["retry_after"] = int(exc.wait)
    return Response(body, status=exc.status_code, headers=headers)


def refusal(code: str, message: str, **extra: Any) -> dict[str, Any]:
    """REST's refusal body: `error` is the machine code, `message` says what to do next."""
    return {"ok": False, "error": code, "message": message, **extra}


def _text(detail: Any) -> str:
    if isinstance(detail, list):
        return " ".join(_text(item) for item in detail)
    if isinstance(detail, dict):
        return " ".join(f"{key}: {_text(value)}" for key, value in detail.items())
    return str(detail)


@csrf_exempt  # bearer clients have no CSRF cookie; they should read "not found", not a CSRF page
def api_not_found(request: HttpRequest, path: str = "") -> JsonResponse:
    message = f"No API endpoint at /{request.path.lstrip('/')}; see /api/v1/docs."
    return JsonResponse(refusal("not_found", message), status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    """A bug's answer: JSON on the machine surfaces (/mcp, /api), Django's page elsewhere. Never
    the exception itself; the log has it."""
    if request.path.startswith(("/mcp", "/api/")):
        message = "The hub failed on this request; it has been logged. Try again, or tell the operator."
        return JsonResponse(refusal("internal_error", message), status=500)
    return defaults.server_error(request)
