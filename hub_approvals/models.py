"""Approvals' models (for now kept in hub_tools.models, their tables' app)."""

from hub_tools.models import PRIORITY_RANK, Approval, ApprovalRule, ApprovalStatus, ApprovalVote

__all__ = ["PRIORITY_RANK", "Approval", "ApprovalRule", "ApprovalStatus", "ApprovalVote"]
