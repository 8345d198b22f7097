"""The hub's own settings plus the benchmark's reference views (never used outside bench/)."""

from __future__ import annotations

from commhub.settings import *  # noqa: F403
from commhub.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench"]
ROOT_URLCONF = "bench.urls"
