"""The tokens page in a real browser (issue 26): the list with long names and a node's long binding,
a new token's value and the switch to strict's confirmation (an unbound token with the long aliases
reported through it) fit a phone (390 px) and 1280 px without sideways scrolling. Shot into
tests/dashboard/screenshots/ (tokens-*.png)."""

from __future__ import annotations

import pytest

from hub_agents.services import membership_set, token_authenticate, token_create, user_get_or_create
from tests.helpers.calls import report_status

pytestmark = pytest.mark.django_db(transaction=True)
SIZES = {"phone": {"width": 390, "height": 844}, "wide": {"width": 1280, "height": 800}}


def fits(page, width: int, path: str) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width, f"{path} scrolls sideways"
    outside = page.evaluate(
        f"[...document.querySelectorAll('main *')].filter(e => e.getBoundingClientRect().right > {width + 1})"
        ".map(e => e.tagName + '.' + e.className)"
    )
    assert outside == [], f"{path}: {outside}"


@pytest.mark.parametrize("size", SIZES)
def test_the_tokens_pages_fit(hub_server, page_for, network, operator, screenshot_dir, size):
    node_agents = ", ".join(f"gpu-build-box-agent-{n:02d}" for n in range(20))
    token_create(network=network, name="gpu-build-box-7.eu-west.internal.example.com", aliases=node_agents)
    token_create(network=network, name="ci", role="viewer")
    _, old_ci = token_create(network=network, name="old-ci-runner-from-before-the-bindings")
    reporter = token_authenticate(raw=old_ci)  # unbound: the agents it reported as go in the losing table
    for n in range(6):
        alias = f"nightly-release-builder-agent-{n:02d}"
        report_status(actor=reporter, alias=alias, resume_id=f"r-{alias}", status="idle")
    carol = user_get_or_create(username="carol.with.a.long.username@example.com")
    membership_set(user=carol, network=network, role="admin")
    token_create(user=carol, name="laptop")
    hub = hub_server()
    page = page_for(hub, operator)
    page.set_viewport_size(SIZES[size])
    width = SIZES[size]["width"]

    page.goto("/tokens/")
    fits(page, width, "/tokens/")
    page.fill("input[name=name]", "builder")
    page.fill("input[name=aliases]", "builder-1, build-*")
    page.click("button[name=create]")
    page.wait_for_selector("#raw-token")
    assert page.input_value("#raw-token").startswith("ntok_")
    fits(page, width, "/tokens/ (made)")
    page.screenshot(path=screenshot_dir / f"tokens-{size}.png", full_page=True)

    page.click("button[name=switch]")
    page.wait_for_selector("table.losing [data-alias=nightly-release-builder-agent-05]")
    page.wait_for_selector("table.keeping")  # carol's laptop: unbound, no agent reported through it
    fits(page, width, "/tokens/policy/")
    page.screenshot(path=screenshot_dir / f"tokens-strict-{size}.png", full_page=True)
    page.click("button[name=confirm]")
    page.wait_for_selector("#policy .pill:has-text('strict')")
