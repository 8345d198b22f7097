"""Request bodies: one JSON object, within the size limit, or a clear 4xx."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import BaseParser


class RequestTooLarge(APIException):
    status_code = 413
    default_code = "request_too_large"


class JSONObjectParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> dict[str, Any]:
        limit = settings.COMMHUB_MAX_REQUEST_BYTES
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise RequestTooLarge(f"The request body is over {limit} bytes.")
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):  # bad UTF-8, bad JSON, absurd nesting
            raise ParseError("The body is not valid JSON.") from None
        if not isinstance(body, dict):
            raise ParseError("The body must be a JSON object of the tool's arguments.")
        return body
