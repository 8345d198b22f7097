"""The kinds of test that `make test-fast` leaves out, marked from what each test uses.

`live` and `browser` follow from the fixtures a test asks for (directly or through other fixtures),
`fuzz` from Hypothesis's `@given`, so a new test is marked without anyone remembering to. `race`
(real threads racing on connections of their own) and `slow` (minutes) are stated in the modules.

The longest kinds run first: `make test` spreads the suite over two workers (pytest-xdist), and a
minutes-long test started last would leave one worker idle while the other finishes it.
"""

from __future__ import annotations

import pytest

# The order the kinds start in; the rest (unit, service, in-process HTTP) after them.
LONGEST_FIRST = ("slow", "browser", "live", "race", "fuzz")

# fixture -> the marker every test that uses it gets
FIXTURE_MARKERS = {
    "hub_server": "live",  # starts daphne processes (tests/plugins/live_hub.py)
    "browser": "browser",  # drives Chromium (tests/dashboard/conftest.py)
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for fixture, marker in FIXTURE_MARKERS.items():
            if fixture in used:
                item.add_marker(marker)
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker("fuzz")
    items.sort(key=_start_order)  # stable: within a kind, the collection's order


def _start_order(item: pytest.Item) -> int:
    return next((n for n, kind in enumerate(LONGEST_FIRST) if item.get_closest_marker(kind)), len(LONGEST_FIRST))
