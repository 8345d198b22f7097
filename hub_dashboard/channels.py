"""The dashboard's channels page (issue 18): the network's channels, a form to create one, and a
channel's members, limits and latest posts (live) with a form to post. Writes go through the tool
registry (channel_create, channel_join, channel_post, channel_leave), as every other transport's do;
the operator acts in channels as DASHBOARD_SENDER + username ("dashboard:ada")."""

from __future__ import annotations

import re
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from hub_agents.actors import DASHBOARD_SENDER
from hub_channels import limits
from hub_channels.models import POSTING_ROLES, ChannelType, MemberRole
from hub_channels.selectors import channel_info, channel_posts, channel_rows
from hub_core.errors import HubError
from hub_core.formats import duration
from hub_dashboard.views import Desk, live_page
from hub_dashboard.wording import CODES, refusal_for_operator
from hub_tools.tools import TOOLS_BY_NAME, invoke

POSTS_SHOWN = 100  # the latest posts of a channel; older kept ones are counted, not shown
POST_CHARS_SHOWN = 20_000  # a post longer than this is cut on the page (channel_read has it whole)
# What each type means, under the channel's name and beside the create form's choice.
TYPE_RULES = {
    ChannelType.GROUP: "anyone in the network joins; members post and read.",
    ChannelType.DIRECT: "exactly two members, named at creation, post and read.",
    ChannelType.BROADCAST: "its owners post; everyone in the network reads.",
    ChannelType.PUBSUB: "anyone in the network publishes; subscribers receive.",
}
NOT_FOUND = CODES["channel_not_found"][1]


def _sender(request: HttpRequest) -> str:
    return DASHBOARD_SENDER + request.user.get_username()


@login_required
def channels_page(request: HttpRequest) -> HttpResponse:
    """The network's channels, and (POST) a new one, owned by the operator's dashboard sender."""
    desk = Desk(request)
    if desk.network_id is None:
        return render(request, "dashboard/no_network.html", desk.context())
    form = {"name": "", "type": ChannelType.GROUP, "members": "", "description": ""}
    error = None
    if request.method == "POST":
        form = {key: request.POST.get(key, "").strip() for key in form}
        arguments = {
            "network_id": desk.network_id,
            "name": form["name"],
            "alias": _sender(request),
            "type": form["type"] or None,
            "members": re.findall(r"[^\s,]+", form["members"]) or None,
            "description": form["description"] or None,
        }
        try:
            created = invoke("channel_create", desk.actor, arguments)
        except HubError as refusal:
            error = refusal_for_operator(refusal)
        else:
            messages.success(request, f"Channel #{created['name']} created; you own it as {_sender(request)}.")
            return redirect("dashboard:channel", channel_id=created["channel_id"])
    response = live_page(
        request,
        "dashboard/channels.html",
        desk.context(
            **_index(desk), form=form, error=error, types=TYPE_RULES, sender=_sender(request), section="channels"
        ),
    )
    if error is not None:
        response.status_code = 400
    return response


@login_required
def channel_page(request: HttpRequest, channel_id: str) -> HttpResponse:
    """One channel beside the list: its members, limits and latest posts, and (POST) a post."""
    desk = Desk(request)
    try:
        channel = channel_info(actor=desk.actor, channel_id=channel_id)
    except HubError:
        return render(request, "dashboard/not_found.html", desk.context(message=NOT_FOUND), status=404)
    if request.method == "GET" and channel["network_id"] != desk.network_id:
        # Another of the operator's networks: switch to it, so the list beside it and the page's
        # live updates (which follow the network shown) are that channel's.
        return redirect(f"{request.path}?network={channel['network_id']}")
    sender = _sender(request)
    content, error = "", None
    if request.method == "POST":
        content = request.POST.get("content", "")
        try:
            seq = _post(desk, channel, sender, content, join=request.POST.get("join") == "1")
        except HubError as refusal:
            error = refusal_for_operator(refusal)
            channel = channel_info(actor=desk.actor, channel_id=channel_id)  # a join may have gone through
        else:
            messages.success(request, f"Posted as {sender} (#{seq}).")
            return redirect(reverse("dashboard:channel", kwargs={"channel_id": channel_id}) + "#post")
    response = live_page(
        request,
        "dashboard/channels.html",
        desk.context(
            **_index(desk),
            **_posts(desk, channel, sender),
            channel=channel,
            type_rule=TYPE_RULES[channel["type"]],
            retention=_retention(channel["config"]),
            may_write=desk.actor.can_write(channel["network_id"]),
            posting=_posting(channel, sender),
            sender=sender,
            content=content,
            error=error,
            section="channels",
        ),
    )
    if error is not None:
        response.status_code = 400
    return response


def _post(desk: Desk, channel: dict[str, Any], sender: str, content: str, *, join: bool) -> int:
    """Post as the dashboard's sender; `join`: the post button said it joins first (a group channel
    takes members' posts only). The content is checked before the join, so an empty post joins nobody."""
    if join:
        TOOLS_BY_NAME["channel_post"].params["content"].parse("content", content)
        try:
            invoke("channel_join", desk.actor, {"channel_id": channel["channel_id"], "alias": sender})
        except HubError as refusal:
            if refusal.code != "already_member":  # joined meanwhile (another tab): post all the same
                raise
    arguments = {"channel_id": channel["channel_id"], "alias": sender, "content": content}
    return invoke("channel_post", desk.actor, arguments)["seq"]


@login_required
@require_POST
def channel_leave_action(request: HttpRequest, channel_id: str) -> HttpResponse:
    desk = Desk(request)
    sender = _sender(request)
    try:
        invoke("channel_leave", desk.actor, {"channel_id": channel_id, "alias": sender})
    except HubError as refusal:
        messages.error(request, refusal_for_operator(refusal).text)
    else:
        messages.success(request, f"{sender} left the channel.")
    return redirect("dashboard:channel", channel_id=channel_id)


def _index(desk: Desk) -> dict[str, Any]:
    """The network's channels by name, each with when it was last posted to."""
    if desk.network_id is None:
        return {"channels": []}
    return {"channels": channel_rows(actor=desk.actor, network_id=desk.network_id, limit=limits.CHANNELS_LIMIT_MAX)}


def _posts(desk: Desk, channel: dict[str, Any], sender: str) -> dict[str, Any]:
    """The channel's latest posts, oldest first: operators watch every channel of their networks, as
    they watch every inbox (their event feed carries every post)."""
    after = max(0, channel["last_seq"] - POSTS_SHOWN)
    read = channel_posts(
        actor=desk.actor, channel_id=channel["channel_id"], after=after, limit=POSTS_SHOWN, watching=True
    )
    posts = read["posts"]
    return {"posts": posts, "earlier": max(0, channel["post_count"] - len(posts)), "chars_shown": POST_CHARS_SHOWN}


def _posting(channel: dict[str, Any], sender: str) -> dict[str, Any]:
    """Whether the dashboard's sender may post (the services' POSTING_ROLES), may join to post, or
    why neither: the post form's button and note."""
    role = next((member["role"] for member in channel["members"] if member["alias"] == sender), None)
    allowed = POSTING_ROLES[channel["type"]]
    if allowed is None:
        return {"button": "Publish", "join": False}
    if role in allowed:
        return {"button": "Post", "join": False}
    if role is None and channel["type"] == ChannelType.GROUP:
        return {"button": f"Join as {sender} and post", "join": True}
    if channel["type"] == ChannelType.DIRECT:
        return {"note": "A direct channel: only its two members post in it."}
    owners = [member["alias"] for member in channel["members"] if member["role"] == MemberRole.OWNER]
    return {"note": f"Only a broadcast channel's owners post in it ({', '.join(owners) or 'none left'})."}


def _retention(config: dict[str, Any]) -> str:
    kept = []
    if config["retention_max_posts"] is not None:
        kept.append(f"the last {config['retention_max_posts']} posts")
    if config["retention_seconds"] is not None:
        kept.append(f"posts younger than {duration(config['retention_seconds'])}")
    return "keeps " + " and ".join(kept) if kept else "keeps every post"
