from __future__ import annotations

from collections.abc import Iterator

import pytest
from freezegun import freeze_time
from freezegun.api import FrozenDateTimeFactory

from tests.helpers import NOW


@pytest.fixture
def clock() -> Iterator[FrozenDateTimeFactory]:
    """Time stands still at NOW until the test moves it with clock.tick(seconds)."""
    with freeze_time(NOW) as frozen:
        yield frozen
