"""The kinds of test that `make test-fast` leaves out, marked from what each test uses.

`live` and `browser` follow from the fixtures a test asks for (directly or through other fixtures),
`fuzz` from Hypothesis's `@given`, so a new test is marked without anyone remembering to. `race`
(real threads racing on connections of their own) and `slow` (minutes) are stated in the modules.
"""

from __future__ import annotations

import pytest

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
