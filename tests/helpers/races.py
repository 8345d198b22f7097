"""Racing calls on real threads, each on a connection of its own (PostgreSQL row locks for real)."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from typing import Any

from django.db import connection

from hub_core.errors import HubError

RACE_TIMEOUT = 60


class Crash:
    """What a racer raised that is not a HubError: it would reach the client as a 500."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
        self.trace = "".join(traceback.format_exception(exc))

    def __repr__(self) -> str:
        return self.trace


def race(*calls: Callable[[], Any]) -> list[Any]:
    """Run the calls in parallel threads, released together; each result or HubError, in order.

    Anything else a call raises, and a call that never returns (a deadlock), fails the test here.
    """
    barrier = threading.Barrier(len(calls))
    unfinished = object()
    outcomes: list[Any] = [unfinished] * len(calls)

    def run(index: int, call: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout=RACE_TIMEOUT)
            outcomes[index] = call()
        except HubError as exc:
            outcomes[index] = exc
        except BaseException as exc:
            outcomes[index] = Crash(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=RACE_TIMEOUT)
    stuck = [index for index, outcome in enumerate(outcomes) if outcome is unfinished]
    assert not stuck, f"racers {stuck} never returned: a deadlock or an endless lock wait"
    crashes = [outcome for outcome in outcomes if isinstance(outcome, Crash)]
    assert not crashes, f"{len(crashes)} racers raised something other than a HubError:\n" + "\n".join(
        map(repr, crashes)
    )
    return outcomes
