"""Schemathesis hooks for tests/e2e/run (loaded through SCHEMATHESIS_HOOKS).

The fuzz checks what the API answers, not how long a long-poll waits: a valid `wait_seconds` on an
empty inbox would hold the call for up to 60 s, past the client's 10 s read timeout. Valid waits are
cut to a fraction of a second (still valid, so every check's expectation holds); invalid ones are
sent as generated, for the API to refuse.
"""

from __future__ import annotations

from typing import Any

import schemathesis

WAIT = 0.2


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    query = case.query
    if not isinstance(query, dict) or "wait_seconds" not in query:
        return
    try:
        seconds = float(query["wait_seconds"])
    except (TypeError, ValueError):
        return
    if WAIT < seconds <= 60:
        query["wait_seconds"] = WAIT
