"""Request bodies: one JSON object, within the size limit, or a clear 4xx."""

from __future__ import annotations

import json
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from hub_core.body import read_body


class JSONObjectParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> dict[str, Any]:
        # The body as /mcp reads it (hub_core.body), not DRF's stream: one reader, one limit.
        raw = read_body(parser_context["request"]._request)
        if not raw:  # no body: the tool's arguments are all optional (a blank one is no JSON: 400)
            return {}
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):  # bad UTF-8, bad JSON, absurd nesting
            raise ParseError("The body is not valid JSON.") from None
        if not isinstance(body, dict):
            raise ParseError("The body must be a JSON object of the tool's arguments.")
        return body
