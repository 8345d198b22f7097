"""Database work of the pool on the test's own thread, for tests in a rolled-back transaction.

/mcp and the REST inbox run their reads and writes through hub_core.waiting's pool: in production on
pool threads, each on a connection of its own, which see only committed rows. A test in pytest-django's
`db` (one transaction per test, rolled back) holds its rows uncommitted on the main thread's
connection, so such a test gets the pool's work run on that thread instead (`thread_sensitive`: the
test client's event loop hands the call back to the waiting main thread) and, as Django's test client
does for its request signals, without closing that connection in between.

Transactional tests (`django_db(transaction=True)`, live hubs, races) keep the real pool threads and
connections: whatever depends on commits, separate connections or the pool itself is tested there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from hub_core import waiting


def _rolled_back(request: pytest.FixtureRequest) -> bool:
    """Does the test run in pytest-django's transaction per test (`db`, `django_db` without
    `transaction=True`)? Transactional tests and tests on data they commit themselves do not."""
    marker = request.node.get_closest_marker("django_db")
    names = set(request.fixturenames)
    if {"transactional_db", "live_server", "hub_server"} & names:
        return False
    if marker is not None:
        return not (marker.kwargs.get("transaction") or (marker.args and marker.args[0]))
    return "db" in names


@pytest.fixture(autouse=True)
def pool_on_the_test_thread(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if not _rolled_back(request):
        return

    def on_the_test_thread(call: Callable[..., Any], thread_sensitive: bool = False) -> Callable[..., Any]:
        return sync_to_async(call, thread_sensitive=True)  # whatever the caller asked for

    monkeypatch.setattr(waiting, "sync_to_async", on_the_test_thread)
    monkeypatch.setattr(waiting, "close_old_connections", lambda: None)
