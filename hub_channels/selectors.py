"""Every read of channels, scoped to the caller's networks: a channel of another network does not
exist for the caller (channel_not_found), and a channel's posts are read by its members (a
broadcast channel's by anyone in the network)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, OuterRef, Subquery
from django.utils import timezone

from hub_agents.actors import Actor
from hub_channels import limits
from hub_channels.models import PUBLIC_TYPES, Channel, ChannelMember, ChannelPost
from hub_core.errors import HubError
from hub_core.formats import timestamp

ChannelDetail = dict[str, Any]


def channel_not_found(channel_id: str) -> HubError:
    return HubError(
        "channel_not_found",
        f"No channel {channel_id!r} in your networks; channel_list shows their ids.",
        status=404,
    )


def not_a_member(channel: Channel, alias: str | None, *, status: int = 403) -> HubError:
    if alias is None:
        message = f"Only members read channel {channel.name} ({channel.id}): pass alias, the member reading."
    else:
        message = f"{alias!r} is not a member of channel {channel.name} ({channel.id}); join it with channel_join."
    return HubError("not_a_member", message, status=status, channel_id=channel.id)


def _visible(actor: Actor, channel_id: str) -> Channel:
    channel = Channel.objects.filter(network_id__in=actor.readable_networks(), pk=channel_id).first()
    if channel is None:
        raise channel_not_found(channel_id)
    return channel


def _retained(channel: Channel, *, now: datetime) -> Any:
    """The channel's posts within its age limit: a post past it is gone even before the next write
    deletes it."""
    posts = ChannelPost.objects.filter(channel=channel)
    if channel.retention_seconds is not None:
        posts = posts.filter(created_at__gt=now - timedelta(seconds=channel.retention_seconds))
    return posts


def posts_past_age(post_ids: list[int], *, now: datetime) -> set[int]:
    """Of these posts, those past their channel's age limit: gone for every reader (search too) even
    before the next post or the sweep deletes them."""
    aged = ChannelPost.objects.filter(pk__in=post_ids, channel__retention_seconds__isnull=False)
    rows = aged.values_list("pk", "created_at", "channel__retention_seconds")
    return {pk for pk, created_at, seconds in rows if created_at <= now - timedelta(seconds=seconds)}


def channel_detail(channel: Channel, *, removed: int | None = None) -> ChannelDetail:
    """A channel with its members (owners first, then by alias), how many posts it keeps and the
    positions of the first kept and the last given; `removed`: posts a write just let go."""
    members = list(ChannelMember.objects.filter(channel=channel))
    members.sort(key=lambda member: (member.role != "owner", member.alias))
    posts = _retained(channel, now=timezone.now())
    detail = {
        **channel.as_row(member_count=len(members)),
        "members": [member.as_row() for member in members],
        "post_count": posts.count(),
        "first_seq": posts.order_by("seq").values_list("seq", flat=True).first(),
    }
    if removed is not None:
        detail["removed"] = removed
    return detail


def channel_info(*, actor: Actor, channel_id: str) -> ChannelDetail:
    """channel_info: any reader of the channel's network sees its members and configuration."""
    return channel_detail(_visible(actor, channel_id))


def channel_rows(
    *,
    actor: Actor,
    network_id: str | None = None,
    alias: str | None = None,
    type: str | None = None,
    name: str | None = None,
    limit: int = limits.CHANNELS_LIMIT_DEFAULT,
) -> list[dict[str, Any]]:
    """channel_list: the channels of the caller's networks by network and name, with member counts;
    only those `alias` belongs to, of one type, or the one named `name`."""
    channels = Channel.objects.filter(network_id__in=actor.readable_networks(network_id))
    if alias is not None:
        # A subquery, not a join on members: the join would leave only the alias's row to count.
        channels = channels.filter(pk__in=ChannelMember.objects.filter(alias=alias).values("channel_id"))
    if type is not None:
        channels = channels.filter(type=type)
    if name is not None:
        channels = channels.filter(name=name)
    # The last post by the (channel, seq) index: one probe per channel listed.
    last_post = ChannelPost.objects.filter(channel=OuterRef("pk")).order_by("-seq").values("created_at")[:1]
    counted = channels.annotate(counted=Count("members", distinct=True), last_post=Subquery(last_post))
    return [
        {**channel.as_row(member_count=channel.counted), "last_post_at": timestamp(channel.last_post)}
        for channel in counted.order_by("network_id", "name")[:limit]
    ]


def channel_posts(
    *,
    actor: Actor,
    channel_id: str,
    alias: str | None = None,
    after: int | None = None,
    since: datetime | None = None,
    limit: int = limits.POSTS_LIMIT_DEFAULT,
    watching: bool = False,
) -> dict[str, Any]:
    """channel_read: the posts after position `after` and/or created after `since`, oldest first, at
    most `limit`. `alias` must be a member; a broadcast channel anyone of the network reads, with or
    without an alias. `watching`: an operator's dashboard reading as nobody in particular, which
    reads every channel of its networks as it watches every inbox (not a tool argument).

    Positions are given under the channel's row lock and each post commits before the next is
    numbered, so paging with after = next_after loses and repeats nothing; only retention takes
    posts away (first_seq says where the kept ones start)."""
    channel = _visible(actor, channel_id)
    if (
        not watching
        and channel.type not in PUBLIC_TYPES
        and (alias is None or not ChannelMember.objects.filter(channel=channel, alias=alias).exists())
    ):
        raise not_a_member(channel, alias)
    now = timezone.now()
    posts = _retained(channel, now=now)
    first_seq = posts.order_by("seq").values_list("seq", flat=True).first()
    if after is not None:
        posts = posts.filter(seq__gt=after)
    if since is not None:
        posts = posts.filter(created_at__gt=since)
    rows = [post.as_row() for post in posts.order_by("seq")[:limit]]
    return {
        "channel_id": channel.id,
        "posts": rows,
        "next_after": rows[-1]["seq"] if rows else (after or 0),
        "last_seq": max(channel.last_seq, rows[-1]["seq"] if rows else 0),
        "first_seq": first_seq,
    }
