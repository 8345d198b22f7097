"""Schemathesis hooks for tests/e2e/run (loaded through SCHEMATHESIS_HOOKS).

The fuzz checks what the API answers, not how long a long-poll waits: a valid `wait_seconds` on an
empty inbox would hold the call for up to 60 s, past the client's 10 s read timeout. Valid waits are
cut to a fraction of a second (still valid, so every check's expectation holds); invalid ones are
sent as generated, for the API to refuse.

A reply's usage (`tokens_in`, `tokens_out`, `cost_usd`, `model`) is stored on the attempt of the task
it answers, so without an `in_reply_to` the API refuses it (400, invalid_argument, naming the field):
a rule between two fields the schema does not state (an empty `in_reply_to` is schema-valid). Such
generated replies are sent without their usage, so the positive-data check sees a request the API
can accept; a test (tests/hub_tasks/test_usage.py) covers the refusal.
"""

from __future__ import annotations

from typing import Any

import schemathesis

WAIT = 0.2


USAGE = ("tokens_in", "tokens_out", "cost_usd", "model")


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    body = case.body
    if case.path.endswith("/replies") and isinstance(body, dict) and not body.get("in_reply_to"):
        for key in USAGE:
            body.pop(key, None)
    query = case.query
    if not isinstance(query, dict) or "wait_seconds" not in query:
        return
    try:
        seconds = float(query["wait_seconds"])
    except (TypeError, ValueError):
        return
    if WAIT < seconds <= 60:
        query["wait_seconds"] = WAIT
