"""A signed-in operator, through Django's test client and on the dashboard's websocket; reading the
pages it gets; and what the browser tests (tests/dashboard) share."""

from __future__ import annotations

import re
from typing import Any

from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client

# The two sizes every dashboard page is checked and shot at (Playwright).
SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


def browser_of(user: AbstractBaseUser) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def signed_in(user: AbstractBaseUser) -> list[tuple[bytes, bytes]]:
    """The headers of a browser signed in as the user, for /ws/dashboard."""
    cookie = browser_of(user).cookies[settings.SESSION_COOKIE_NAME].value
    return [(b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()), (b"origin", b"http://localhost")]


def websocket(headers: list[tuple[bytes, bytes]], query: str = "") -> WebsocketCommunicator:
    from commhub.asgi import application

    return WebsocketCommunicator(application, "/ws/dashboard" + query, headers=headers)


def text(reply) -> str:
    """A page's HTML, as the test client received it."""
    return reply.content.decode()


def aliases_in_order(page: str) -> list[str]:
    """The agents' aliases a page shows (its data-alias attributes), in the page's order."""
    return re.findall(r'data-alias="([^"]+)"', page)


def page_errors(page: Any) -> list[str]:
    """The list the uncaught JavaScript errors of a Playwright page are added to from now on."""
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    return problems


def fits(page: Any, width: int, where: str) -> None:
    """The page scrolls not sideways at `width` px, and nothing on it runs off its right edge (a
    browser test's page; `where` names it in the failure)."""
    outside = page.evaluate(
        f"[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > {width + 1})"
        ".map(e => e.tagName + '.' + e.className + ' ' + (e.innerText || '').slice(0, 40))"
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= width, f"{where} scrolls sideways: {outside}"
    assert outside == [], f"{where}: runs off the right edge: {outside}"
