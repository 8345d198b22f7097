"""Approvals of held calls (hub_approvals): list_approvals, decide_approval.

Each spec names its arguments (hub_tools.params; the shared ones in hub_tools.args), the service it
calls and how its answer renders (hub_tools.results); hub_tools.tools gathers every module's specs in
the contract's order."""

from __future__ import annotations

from hub_approvals.models import ApprovalStatus, ApprovalVote
from hub_approvals.services import approval_decide, approval_list
from hub_tasks import limits
from hub_tools import args as A
from hub_tools import params as P
from hub_tools import results as R
from hub_tools.schema import nullable, result, rows
from hub_tools.tool import Tool


def specs() -> list[Tool]:
    """These tools' specs, from the limits, tables and settings as they are now."""
    NETWORK_ID, AT_MOST = A.NETWORK_ID, A.AT_MOST
    return [
        # Beyond the contract: approvals (hub_approvals). A network's rules may hold calls of
        # send_task, send_message, broadcast, retry_task, cancel_task and reassign_task: such a call
        # answers {"ok": true, "pending_approval": true, "approval_id": ...} and runs once approved.
        Tool(
            name="list_approvals",
            title="List approvals",
            description=(
                "Calls held by the network's approval rules, pending first (oldest first), then decided (newest "
                "first): tool, arguments, who asked, votes, and the result once it ran."
            ),
            params={
                "status": P.choice("Only approvals in this state.", ApprovalStatus.values),
                "approval_id": P.identifier("Only this approval."),
                "network_id": NETWORK_ID,
                "limit": AT_MOST,
            },
            service=approval_list,
            render=R.approvals,
            output=result(approvals=rows("Pending first, oldest first; then decided, newest first.")),
            read_only=True,
        ),
        Tool(
            name="decide_approval",
            title="Approve or reject a held call",
            description=(
                "Approve or reject a held call (network owners and admins, not its caller; each once). A "
                "rejection ends it; the approval completing its tier runs it once, as its caller, and returns "
                "its result. The caller's alias is told in its inbox."
            ),
            params={
                "approval_id": P.identifier("The approval's id (approval_id).", required=True),
                "decision": P.choice("approve or reject.", ApprovalVote.Decision.values, required=True),
                "note": P.text("Why: shown to the caller with a rejection, kept with the vote.", limits.ANSWER_MAX),
            },
            service=approval_decide,
            render=R.as_fields,
            output=result(
                approval_id={"type": "string"},
                status={"type": "string", "enum": ApprovalStatus.values},
                approvals={"type": "integer", "description": "yes votes so far"},
                approvals_required={"type": "integer"},
                result={**nullable("object"), "description": "the held call's result object, once it ran"},
                reason={"type": "string"},
            ),
        ),
    ]
