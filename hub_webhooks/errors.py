"""hub_webhooks' error codes (hub_core.errors catalogue)."""

from __future__ import annotations

from hub_core.errors import codes_declare

codes_declare(
    __name__,
    {
        "webhook_not_found": (404, "No such webhook subscription in your networks."),
        "webhook_limit": (409, "The network has as many webhook subscriptions as it may."),
    },
)
