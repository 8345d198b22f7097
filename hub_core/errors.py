"""The one domain error, raised by services and translated once per transport.

`code` is the stable machine code (REST's `error`, log lines, tests). `error` is the wording the
MCP tool contract promises to agents (`"task not found"`, `"task is terminal (replied)"`, ...);
where the contract names no wording it equals the code. `message` tells the caller what to do next.
"""

from __future__ import annotations

from typing import Any


class HubError(Exception):
    def __init__(
        self,
        code: str,
        message: str,
        *,
        error: str | None = None,
        status: int = 400,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.error = error or code
        self.status = status
        self.extra = extra

    def as_result(self) -> dict[str, Any]:
        return {"ok": False, "error": self.error, "code": self.code, "message": self.message, **self.extra}

    def __repr__(self) -> str:
        return f"HubError({self.code!r}, {self.message!r})"


def invalid_argument(field: str, problem: str, *, status: int = 400) -> HubError:
    return HubError(
        "invalid_argument",
        f"Fix the argument `{field}` and call again: it {problem}.",
        status=status,
        error=f"{field}: {problem}",
        field=field,
    )


def unusable_argument(field: str, problem: str) -> HubError:
    """An argument its schema admits that this call cannot use (a query with no word to look for, a
    direct channel's members): 409, as every refusal of schema-valid input; 400 means "not what the
    schema says"."""
    return invalid_argument(field, problem, status=409)


def permission_denied(message: str) -> HubError:
    return HubError("permission_denied", message, status=403)


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
