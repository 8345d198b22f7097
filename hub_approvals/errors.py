"""hub_approvals' error codes (hub_core.errors catalogue)."""

from __future__ import annotations

from hub_core.errors import codes_declare

codes_declare(
    __name__,
    {
        "approval_not_found": (404, "No such approval in your networks."),
        "approval_decided": (409, "The approval has been decided (or has expired) already."),
        "approval_voted": (409, "You decided this approval already; it waits for another approver."),
        "approval_rule_not_found": (404, "No such approval rule in your networks."),
    },
)
