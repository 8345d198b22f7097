"""The one domain error, raised by services and translated once per transport; and the catalogue of
its codes.

`code` is the stable machine code (REST's `error`, log lines, tests). `error` is the wording the
MCP tool contract promises to agents (`"task not found"`, `"task is terminal (replied)"`, ...);
where the contract names no wording it equals the code. `message` tells the caller what to do next.

Codes are declared, not scattered: each app declares its own in its `errors.py` (`codes_declare`),
next to the helpers that build its refusals, and they gather in one catalogue (`error_catalogue`),
which the OpenAPI error description and README list; a test fails on a code raised anywhere that
they do not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.module_loading import autodiscover_modules


@dataclass(frozen=True)
class Problem:
    """What is wrong with an argument, for a program (the dashboard's wording): `kind` is one of
    KINDS; `detail` holds what the kind names (too_long: `max`; not_one_of: `choices`)."""

    kind: str
    detail: dict[str, Any] = field(default_factory=dict)


# The kinds of invalid_argument: required (missing or null), empty (blank text), too_long (max),
# not_text (a NUL or a lone surrogate), not_one_of (choices), and other (anything else: a type, a
# range, a format; the wording says which).
KINDS = ("required", "empty", "too_long", "not_text", "not_one_of", "other")


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
        # invalid_argument's structured kind; off the wire (as_result), which stays as it was.
        self.problem: Problem | None = None

    def as_result(self) -> dict[str, Any]:
        return {"ok": False, "error": self.error, "code": self.code, "message": self.message, **self.extra}

    def __repr__(self) -> str:
        return f"HubError({self.code!r}, {self.message!r})"


# --- the catalogue --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorCode:
    code: str
    status: int  # the HTTP status it answers with (the usual one, where it depends)
    meaning: str  # when it is answered, in a line (README's table, the OpenAPI description)
    declared_in: str  # the module declaring it


_codes: dict[str, ErrorCode] = {}


def codes_declare(module: str, codes: dict[str, tuple[int, str]]) -> None:
    """An app's codes, from its errors.py: `{code: (status, meaning)}`."""
    for code, (status, meaning) in codes.items():
        known = _codes.get(code)
        if known is not None and known.declared_in != module:
            raise ValueError(f"{code} is declared twice: in {known.declared_in} and {module}")
        _codes[code] = ErrorCode(code, status, meaning, module)


def error_catalogue() -> dict[str, ErrorCode]:
    """Every declared code (every installed app's errors.py), sorted by code."""
    autodiscover_modules("errors")
    return dict(sorted(_codes.items()))


codes_declare(
    __name__,
    {
        "invalid_argument": (
            400,
            "An argument is missing, malformed or out of range (409: one this call cannot use); `field` names it.",
        ),
        "permission_denied": (403, "The token's role or network does not allow this."),
        "unauthorized": (401, "No token, or an unknown, expired or revoked one (or a bad login)."),
        "request_too_large": (413, "The body is over the size limit."),
    },
)


def invalid_argument(field: str, problem: str, *, status: int = 400, kind: str = "other", **detail: Any) -> HubError:
    """`kind` (KINDS) and `detail` say for a program what `problem` says in words."""
    if kind not in KINDS:
        raise ValueError(f"invalid_argument kind {kind!r} is not one of {', '.join(KINDS)}")
    refusal = HubError(
        "invalid_argument",
        f"Fix the argument `{field}` and call again: it {problem}.",
        status=status,
        error=f"{field}: {problem}",
        field=field,
    )
    refusal.problem = Problem(kind, detail)
    return refusal


def unusable_argument(field: str, problem: str) -> HubError:
    """An argument its schema admits that this call cannot use (a query with no word to look for, a
    direct channel's members): 409, as every refusal of schema-valid input; 400 means "not what the
    schema says"."""
    return invalid_argument(field, problem, status=409)


def permission_denied(message: str) -> HubError:
    return HubError("permission_denied", message, status=403)
