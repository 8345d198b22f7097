"""The fleet page's nodes in a real browser (issue 25 item 7): the node strip and each agent's node fit
a phone (390 px) and 1280 px without sideways scrolling, and a node's report updates both live."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.django_db(transaction=True)
LIVE = 5_000  # ms, as the other live pages' tests wait
SIZES = {"phone": {"width": 390, "height": 844}, "wide": {"width": 1280, "height": 800}}


def post(hub: Any, agent: Any, path: str, body: dict[str, Any]) -> None:
    reply = httpx.post(f"{hub.url}/api/v1/{path}", json=body, headers=agent.headers, timeout=30)
    assert reply.status_code == 200, reply.text


def node(n: int, used: int, aliases: list[str]) -> dict[str, Any]:
    return {
        "node_id": f"node-{n}",
        "node_name": f"gpu-build-box-{n}.eu-west.internal.example.com",  # long: must not widen the page
        "host": f"gpu-build-box-{n}.eu-west.internal.example.com",
        "os": "Linux 6.8.0-49-generic x86_64 (Ubuntu 24.04.1 LTS)",
        "agent_version": "0.9.0",
        "runtimes": [{"name": "claude", "version": "2.1.3"}, {"name": "codex", "version": "0.58.0"}],
        "agents": [{"alias": alias, "runtime": "claude", "concurrency": 2, "running": 1} for alias in aliases],
        "slots_total": 8,
        "slots_used": used,
    }


@pytest.mark.parametrize("size", SIZES)
def test_nodes_fit_the_page_and_update_live(hub_server, page_for, agent_http, operator, size):
    hub = hub_server()
    for n in range(4):
        post(hub, agent_http, "sessions/report", {"alias": f"agent-{n}", "status": "working", "resume_id": f"r{n}"})
    for n in range(3):
        post(hub, agent_http, "nodes/report", node(n, used=n + 1, aliases=[f"agent-{n}"]))
    page = page_for(hub, operator)
    page.set_viewport_size(SIZES[size])

    for path in ("/fleet/", "/fleet/?view=table"):
        page.goto(path)
        page.wait_for_selector("#live.on", timeout=LIVE)
        assert page.evaluate("document.documentElement.scrollWidth") <= SIZES[size]["width"], path
        assert page.locator(".nodes .node").count() == 3
        outside = page.evaluate(
            f"[...document.querySelectorAll('.nodes .node, .nodes .node *, a.node-link')]"
            f".filter(e => e.getBoundingClientRect().right > {SIZES[size]['width'] + 1}).length"
        )
        assert outside == 0, path
        assert page.locator("a.node-link").count() == 3

    # A report moves agent-3 onto node-0 and fills a slot: the strip and agent-3's row follow live.
    post(hub, agent_http, "nodes/report", node(0, used=4, aliases=["agent-0", "agent-3"]))
    page.wait_for_selector(".nodes .node:has-text('4 of 8 slots')", timeout=LIVE)
    page.wait_for_selector("tr[data-alias='agent-3'] a.node-link", timeout=LIVE)
    page.click("tr[data-alias='agent-3'] a.node-link")
    assert page.evaluate("location.hash") == page.locator(".nodes .node").first.evaluate("e => '#' + e.id")
