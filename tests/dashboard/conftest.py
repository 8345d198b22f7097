"""Headless Chromium driving live hubs: `browser`, `page_for(hub, user)`, `screenshot_dir`.

Needs Debian's Chromium at /usr/bin/chromium and Playwright's Python package (tests/dashboard/install.sh);
without them the whole package is skipped, so `make test` passes on machines without a browser.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.management import call_command
from django.db import connection
from django.test import Client

from hub_agents.services import membership_set
from tests.helpers.live import Hub

try:
    from playwright.sync_api import sync_playwright
except ImportError:
    sync_playwright = None

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

CHROMIUM = Path("/usr/bin/chromium")
MISSING = [str(CHROMIUM)] * (not CHROMIUM.exists()) + ["the playwright package"] * (sync_playwright is None)

# Playwright's own browser download cannot reach its CDN here, and must never be needed: we always
# launch Debian's build. The background-networking flags stop Chromium dialling Google services,
# which a closed network refuses.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
HERE = Path(__file__).resolve().parent
SCREENSHOTS = HERE / "screenshots"

PageFactory = Callable[..., "Page"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Without a browser, skip this package (not fail it), so `make test` passes anywhere.

    A hook, not a module-level pytest.skip() here: pytest loads the conftests of its command-line
    paths before collecting, and a skip raised then aborts the whole run.
    """
    if MISSING:
        skip = pytest.mark.skip(reason=f"browser tests need {' and '.join(MISSING)}: run tests/dashboard/install.sh")
        for item in items:
            if item.path.is_relative_to(HERE):
                item.add_marker(skip)


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    """One Chromium for all browser tests, on the embedded default only: the browser checks what the
    pages do, which is the same on both databases, and CI's second run (PostgreSQL and Redis) keeps
    their server side (tests/hub_dashboard) and the Redis-carried socket (tests/hub_live) within its
    time budget without them.

    Playwright's sync API keeps its asyncio loop "running" in the main thread until it stops. Django
    then refuses ORM calls (lest they block that loop); but the loop waits in a suspended greenlet
    while test code runs, so nothing is blocked: allow them, for as long as Playwright is open. And
    package, not session, scope: the loop must stop before the rest of the suite, whose ORM calls
    and asyncio.run() would fail beside it.
    """
    if connection.vendor != "sqlite":
        pytest.skip("the browser runs once per CI run, on the embedded default (SQLite)")
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session", autouse=True)
def _collected_static() -> None:
    """WhiteNoise serves only collected files (dashboard/live.js among them), indexed when a hub
    starts; a fresh checkout has none until `make run`, so collect before any hub starts."""
    call_command("collectstatic", interactive=False, verbosity=0)


@pytest.fixture
def operator(request: pytest.FixtureRequest, network, django_user_model) -> AbstractBaseUser:
    """ada, an operator of `network` with the test module's OPERATOR_ROLE (default owner)."""
    user = django_user_model.objects.create_user("ada", password="unused")
    membership_set(user=user, network=network, role=getattr(request.module, "OPERATOR_ROLE", "owner"))
    return user


@pytest.fixture
def page_for(browser: Browser) -> Iterator[PageFactory]:
    """page_for(hub, user=None) → a page in a fresh browser context, logged in as `user` if given."""
    contexts: list[BrowserContext] = []

    def new_page(hub: Hub, user: AbstractBaseUser | None = None) -> Page:
        context = browser.new_context(base_url=hub.url)
        contexts.append(context)
        if user is not None:
            client = Client()
            client.force_login(user)
            session = client.cookies[settings.SESSION_COOKIE_NAME].value
            context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": hub.url}])
        return context.new_page()

    yield new_page
    for context in contexts:
        context.close()


@pytest.fixture(scope="session")
def screenshot_dir() -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    return SCREENSHOTS
