"""hub_tasks' error codes (hub_core.errors catalogue) and the helpers for its common refusals."""

from __future__ import annotations

from typing import Any

from hub_core.errors import HubError, codes_declare

codes_declare(
    __name__,
    {
        "task_not_found": (404, "No such task in your networks."),
        "task_terminal": (409, "The task has already ended (replied, failed, expired or cancelled)."),
        "task_not_retryable": (409, "Only a failed, expired or cancelled task can be retried."),
        "task_open": (409, "The task waits in the open pool: claim it first (claim_task)."),
        "task_held": (409, "The task waits (depends_on, not_before or its retry time) and is not delivered yet."),
        "task_not_delivered": (409, "The task is not with its agent (delivered or running) now."),
        "open_task_held": (409, "An open task (required_skills) cannot also wait for others."),
        "pool_alias_required": (409, "A task with required_skills goes to the alias `pool`."),
        "parent_task_not_found": (404, "No task `parent_task_id` in the network."),
        "idempotency_conflict": (409, "The idempotency key was used for a different task."),
        "message_not_found": (404, "No such inbox message of this alias."),
        "message_already_acked": (409, "The inbox message was acknowledged already."),
        "question_not_found": (404, "No such question in your networks."),
        "question_answered": (409, "The question has been answered already."),
        "budget_exhausted": (409, "A budget of the task's scope is spent for its period and refuses new work."),
    },
)


def task_not_found(task_id: str) -> HubError:
    return HubError(
        "task_not_found",
        f"No task {task_id!r} in your networks; check the id (list_tasks shows recent ones).",
        error="task not found",
        status=404,
    )


def task_terminal(status: str, **extra: Any) -> HubError:
    return HubError(
        "task_terminal",
        f"The task is already {status}; a finished task can only be retried (failed/expired/cancelled).",
        error=f"task is terminal ({status})",
        status=409,
        **extra,
    )
