"""hub_tools' error codes (hub_core.errors catalogue): the door's own refusals."""

from __future__ import annotations

from hub_core.errors import codes_declare

codes_declare(
    __name__,
    {
        "rate_limited": (429, "Too many writes from this caller; `retry_after` says when to try again."),
        "idempotency_key_reused": (409, "The idempotency_key was used for another call."),
    },
)
