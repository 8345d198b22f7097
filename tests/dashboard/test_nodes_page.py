"""The Nodes page in a real browser (issue 28 item 1): it fits a phone (390 px) and 1280 px without
sideways scrolling; an owner's Tail and Stop buttons send commands, and the node's answers (done, a
tail's lines) appear live. Screenshots at both sizes go to tests/dashboard/screenshots/."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.django_db(transaction=True)
LIVE = 5_000  # ms, as the other live pages' tests wait
SIZES = {"phone": {"width": 390, "height": 844}, "wide": {"width": 1280, "height": 800}}


def call(hub: Any, agent: Any, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    reply = httpx.request(method, f"{hub.url}/api/v1/{path}", json=body, headers=agent.headers, timeout=30)
    assert reply.status_code in (200, 201), reply.text
    return reply.json()


@pytest.mark.parametrize("size", SIZES)
def test_the_nodes_page_fits_and_shows_commands_live(hub_server, page_for, agent_http, operator, screenshot_dir, size):
    hub = hub_server()
    task = call(
        hub, agent_http, "POST", "tasks", {"alias": "builder", "task": "port the parser", "from_session": "lead"}
    )
    call(hub, agent_http, "POST", "sessions/report", {
        "alias": "builder", "status": "working", "resume_id": "r-builder", "task": task["task_id"], "node_id": "box-1",
        "session_id": "0f9e8d7c-6b5a-4938-8271-605f4e3d2c1b",
    })  # fmt: skip
    call(hub, agent_http, "POST", "nodes/report", {
        "node_id": "box-1", "node_name": "gpu-build-box-1.eu-west.internal.example.com",
        "host": "gpu-build-box-1.eu-west.internal.example.com",
        "os": "Linux 6.8.0-49-generic x86_64 (Ubuntu 24.04.1 LTS)",
        "agent_version": "0.9.0", "runtimes": [{"name": "claude", "version": "2.1.3"}],
        "agents": [
            {"alias": "builder", "runtime": "claude", "concurrency": 2, "running": 1},
            {"alias": "reviewer-long-alias", "runtime": "claude", "concurrency": 1, "running": 0, "paused": True},
        ],
        "slots_total": 3, "slots_used": 1,
    })  # fmt: skip
    page = page_for(hub, operator)
    page.set_viewport_size(SIZES[size])
    page.goto("/nodes/")
    page.wait_for_selector("#live.on", timeout=LIVE)

    page.click("tr[data-alias='builder'] button:has-text('Tail')")
    page.wait_for_selector(".commands li:has-text('tail')", timeout=LIVE)
    (sent,) = call(hub, agent_http, "GET", "nodes/commands")["commands"]
    assert (sent["kind"], sent["status"], sent["task_id"]) == ("tail", "sent", task["task_id"])
    # The node answers (as commhub-agent node does): the page shows the lines without a reload.
    lines = ["running tests", "Authorization: [redacted]", "3 passed"]
    call(hub, agent_http, "POST", f"nodes/commands/{sent['command_id']}/ack", {"ok": True, "lines": lines})
    page.wait_for_selector("pre.tail:has-text('3 passed')", timeout=LIVE)
    page.click("tr[data-alias='builder'] button:has-text('Stop')")
    page.wait_for_selector(".commands li:has-text('stop')", timeout=LIVE)

    assert page.evaluate("document.documentElement.scrollWidth") <= SIZES[size]["width"]
    outside = page.evaluate(
        f"[...document.querySelectorAll('.node-card, .node-card *')]"
        f".filter(e => e.getBoundingClientRect().right > {SIZES[size]['width'] + 1}).length"
    )
    assert outside == 0
    shot = screenshot_dir / f"nodes-{size}.png"
    page.screenshot(path=shot, full_page=True)
    assert shot.stat().st_size > 5_000
