"""Helpers shared by the test modules: plain functions and classes, never fixtures.

Fixtures live in tests/conftest.py and the plugins it loads (tests/plugins/); test modules and
conftests import helpers from this package only, never from each other.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hub_core.errors import HubError

ROOT = Path(__file__).resolve().parents[2]  # the checkout: manage.py, agent/, README.md
NOW = datetime(2026, 4, 12, 10, 0, tzinfo=UTC)  # where the `clock` fixture (tests/hub_tasks) stops time


def refused(call: Callable[..., Any], /, *args: Any, **kwargs: Any) -> HubError:
    """The HubError `call(*args, **kwargs)` raises (the test fails if it raises none)."""
    with pytest.raises(HubError) as caught:
        call(*args, **kwargs)
    return caught.value


def bearer(token: str) -> dict[str, str]:
    """The Authorization header of a request made with `token`."""
    return {"Authorization": f"Bearer {token}"}


def moment(text: str) -> datetime:
    """A time as the tools and the API write it (ISO 8601, maybe with a Z), as an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
