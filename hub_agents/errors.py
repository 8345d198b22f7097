"""hub_agents' error codes (hub_core.errors catalogue) and the helper for its identity refusal."""

from __future__ import annotations

from hub_core.errors import HubError, codes_declare

codes_declare(
    __name__,
    {
        "alias_not_yours": (403, "The token may not act as the alias named (its binding, the identity policy)."),
        "agent_not_found": (404, "No agent of that alias ever reported in the network."),
        "network_required": (400, "The caller reaches several networks (or none): name one, `network_id`."),
        "network_token_required": (403, "The call speaks for one network's agents: use a network token."),
        "node_not_found": (404, "No node of that node_id reported in the network."),
        "node_offline": (409, "The node sent no report for too long to take a command; it would expire."),
        "command_not_found": (404, "No command of that command_id in the caller's networks."),
        "command_answered": (409, "The command was already answered (done, failed or expired)."),
        # Raised by commhub/login_guard.py: the project package is no app, so its one code is
        # declared with the accounts it guards.
        "login_locked": (
            429,
            "Too many failed logins for the username or address; `retry_after` says when to try again.",
        ),
    },
)


def alias_not_yours(message: str) -> HubError:
    return HubError("alias_not_yours", message, status=403)
