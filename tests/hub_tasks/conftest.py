from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from freezegun import freeze_time
from freezegun.api import FrozenDateTimeFactory

NOW = datetime(2026, 4, 12, 10, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> Iterator[FrozenDateTimeFactory]:
    """Time stands still at NOW until the test moves it with clock.tick(seconds)."""
    with freeze_time(NOW) as frozen:
        yield frozen
