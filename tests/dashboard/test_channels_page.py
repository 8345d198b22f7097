"""Channels in a real browser (issue 18): an operator creates a channel with the page's form and
posts in it; an agent's post over MCP appears in the open page without a reload (the channel_post
event refreshes the posts and the list); posting in an agent's group channel joins it first. Shots
of the page at desktop and phone size."""

from __future__ import annotations

import pytest

from hub_channels.models import Channel, ChannelMember, ChannelPost
from tests.helpers.dashboard import SIZES, page_errors
from tests.helpers.live import rest

pytestmark = pytest.mark.django_db(transaction=True)
LIVE = 5_000  # ms
OPERATOR_ROLE = "member"  # the `operator` fixture's role in the network
POSTS = "[data-live=channel_posts]"


def test_an_operator_creates_a_channel_posts_and_sees_an_agents_post_live(
    hub_server, page_for, agent_http, operator, network, screenshot_dir
):
    hub = hub_server()
    page = page_for(hub, operator)
    problems = page_errors(page)
    page.goto("/channels/")
    assert "No channels in this network yet" in page.inner_text("[data-live=channels]")

    page.fill("#new input[name=name]", "release")
    page.check("#new input[name=type][value=group]")
    page.fill("#new input[name=members]", "coder, reviewer")
    page.fill("#new input[name=description]", "Shipping 2.4")
    page.click("#new button.primary")

    page.wait_for_selector(".notice.success:has-text('Channel #release created')", timeout=LIVE)
    channel = Channel.objects.get(network=network, name="release")
    assert page.url.endswith(f"/channels/{channel.pk}/")
    page.wait_for_selector("#live.on", timeout=LIVE)
    page.fill("#post textarea[name=content]", "Freeze at 16:00; <b>no</b> merges after.")
    page.click("#post button.primary")
    page.wait_for_selector(".notice.success:has-text('Posted as dashboard:ada (#1)')", timeout=LIVE)
    page.wait_for_selector("#live.on", timeout=LIVE)
    assert page.inner_text(f"{POSTS} li.post[data-key=p1] pre") == "Freeze at 16:00; <b>no</b> merges after."
    swaps = page.evaluate("Number(document.body.dataset.liveSwaps || 0)")

    answer = agent_http.mcp(hub, "channel_post", channel_id=channel.pk, alias="coder", content="Parser merged.")
    other = rest(
        hub, agent_http, "POST", f"/channels/{channel.pk}/posts", json={"alias": "reviewer", "content": "LGTM"}
    )

    assert answer["ok"] and answer["seq"] == 2 and other["seq"] == 3
    page.wait_for_selector(f"{POSTS} li.post[data-key=p3]", timeout=LIVE)  # without a reload
    assert page.evaluate("Number(document.body.dataset.liveSwaps || 0)") > swaps
    senders = page.locator(f"{POSTS} li.post header b").all_inner_texts()
    assert senders == ["dashboard:ada", "coder", "reviewer"]
    assert page.locator(f"{POSTS} li.post pre").all_inner_texts()[1:] == ["Parser merged.", "LGTM"]
    page.wait_for_selector(f"[data-live=channels] li[data-key='{channel.pk}'][data-version='3-3']", timeout=LIVE)
    assert [p.sender for p in ChannelPost.objects.order_by("seq")] == ["dashboard:ada", "coder", "reviewer"]

    page.wait_for_timeout(1_700)  # the new posts' highlight fades before the shots
    shots = {"desktop": "channels.png", "phone": "channels-phone.png"}
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        page.screenshot(path=screenshot_dir / shots[size], full_page=True)
    assert problems == []


def test_posting_in_an_agents_group_channel_joins_it_and_other_channels_posts_stay_out(
    hub_server, page_for, agent_http, operator, network
):
    hub = hub_server()
    mine = agent_http.mcp(hub, "channel_create", name="backend", alias="lead", members=["coder"])
    elsewhere = agent_http.mcp(hub, "channel_create", name="frontend", alias="lead", members=["designer"])
    page = page_for(hub, operator)
    problems = page_errors(page)
    page.goto(f"/channels/{mine['channel_id']}/")
    page.wait_for_selector("#live.on", timeout=LIVE)
    assert page.inner_text("#post button.primary") == "Join as dashboard:ada and post"

    page.fill("#post textarea[name=content]", "Joining to help.")
    page.click("#post button.primary")

    page.wait_for_selector(".notice.success:has-text('Posted as dashboard:ada (#1)')", timeout=LIVE)
    assert page.inner_text("#post button.primary") == "Post"
    assert ChannelMember.objects.filter(channel_id=mine["channel_id"], alias="dashboard:ada").exists()
    page.wait_for_selector("#live.on", timeout=LIVE)
    page.fill("#post textarea[name=content]", "half-typed")  # a live refresh must not take it away
    page.evaluate("document.querySelector('[data-live=channel_posts] ol').dataset.mark = 'unrefreshed'")

    agent_http.mcp(hub, "channel_post", channel_id=elsewhere["channel_id"], alias="designer", content="not here")
    # The list follows every channel's posts; this channel's posts only its own.
    page.wait_for_selector(
        f"[data-live=channels] li[data-key='{elsewhere['channel_id']}'][data-version='1-2']", timeout=LIVE
    )
    page.wait_for_timeout(500)  # the batch's regions are fetched one after another: let it finish
    assert page.locator(f"{POSTS} ol[data-mark=unrefreshed]").count() == 1
    agent_http.mcp(hub, "channel_post", channel_id=mine["channel_id"], alias="coder", content="Welcome!")

    page.wait_for_selector(f"{POSTS} li.post[data-key=p2]:has-text('Welcome!')", timeout=LIVE)
    assert "not here" not in page.inner_text(POSTS) and page.locator(f"{POSTS} ol[data-mark]").count() == 0
    assert page.input_value("#post textarea[name=content]") == "half-typed"
    assert problems == []
