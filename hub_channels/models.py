"""Channels: named conversations of agents in a network (direct, group, broadcast, pub/sub), their
members, and their posts, each at a position (seq) that only grows, for lossless cursor reads.

Who may do what is the services' business (hub_channels.services); the table of it is
POSTING_ROLES below, next to the types it is about.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.db import models
from django.utils import timezone

from hub_agents.models import Network
from hub_channels import limits
from hub_core.formats import timestamp


def new_channel_id() -> str:
    return f"chn_{secrets.token_hex(8)}"


class ChannelType(models.TextChoices):
    DIRECT = "direct"  # exactly two members, fixed at creation
    GROUP = "group"  # members talk to each other
    BROADCAST = "broadcast"  # owners announce, members (and every reader of the network) read
    PUBSUB = "pubsub"  # anyone in the network publishes; subscribers receive


class MemberRole(models.TextChoices):
    OWNER = "owner"
    MEMBER = "member"
    SUBSCRIBER = "subscriber"  # a pub/sub channel's members


# Who may post, by channel type: the roles of members allowed; None: anyone in the network.
POSTING_ROLES: dict[str, frozenset[str] | None] = {
    ChannelType.DIRECT: frozenset({MemberRole.OWNER, MemberRole.MEMBER}),
    ChannelType.GROUP: frozenset({MemberRole.OWNER, MemberRole.MEMBER}),
    ChannelType.BROADCAST: frozenset({MemberRole.OWNER}),
    ChannelType.PUBSUB: None,
}
# Channel types whose posts every reader of the network may read, member or not.
PUBLIC_TYPES = frozenset({ChannelType.BROADCAST})


class Channel(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=new_channel_id, editable=False)
    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="channels")
    name = models.CharField(max_length=limits.NAME_MAX)
    type = models.CharField(max_length=16, choices=ChannelType.choices, default=ChannelType.GROUP)
    description = models.TextField(blank=True)
    created_by = models.CharField(max_length=200, help_text="The alias that created the channel (its first owner).")
    max_members = models.PositiveIntegerField(null=True, blank=True, help_text="Empty: no limit.")
    max_message_bytes = models.PositiveIntegerField(default=limits.MESSAGE_BYTES_DEFAULT)
    # Retention, applied whenever a post is written (and when it is configured): keep at most this
    # many posts and/or posts younger than this many seconds. Empty: no such limit.
    retention_max_posts = models.PositiveIntegerField(null=True, blank=True)
    retention_seconds = models.PositiveIntegerField(null=True, blank=True)
    # The last position given to a post, raised under this row's lock: positions only grow and a
    # post commits before the next one is numbered, so readers paging by seq lose and repeat nothing.
    last_seq = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["network", "name"], name="channel_unique_network_name")]

    def __str__(self) -> str:
        return f"{self.name} ({self.type})"

    def config(self) -> dict[str, Any]:
        return {
            "max_members": self.max_members,
            "max_message_bytes": self.max_message_bytes,
            "retention_max_posts": self.retention_max_posts,
            "retention_seconds": self.retention_seconds,
        }

    def as_row(self, *, member_count: int) -> dict[str, Any]:
        return {
            "channel_id": self.id,
            "network_id": self.network_id,
            "name": self.name,
            "type": self.type,
            "description": self.description,
            "created_by": self.created_by,
            "created_at": timestamp(self.created_at),
            "member_count": member_count,
            "last_seq": self.last_seq,
            "config": self.config(),
        }


class ChannelMember(models.Model):
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="members")
    alias = models.CharField(max_length=200)
    role = models.CharField(max_length=16, choices=MemberRole.choices, default=MemberRole.MEMBER)
    joined_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["channel", "alias"], name="channel_member_unique_alias")]
        # channel_list's filter: the channels an alias belongs to.
        indexes = [models.Index(fields=["alias"], name="channel_member_alias")]

    def __str__(self) -> str:
        return f"{self.alias} in {self.channel_id} ({self.role})"

    def as_row(self) -> dict[str, Any]:
        return {"alias": self.alias, "role": self.role, "joined_at": timestamp(self.joined_at)}


class ChannelPost(models.Model):
    id = models.BigAutoField(primary_key=True)
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="posts")
    seq = models.BigIntegerField()
    sender = models.CharField(max_length=200)
    content = models.TextField()
    kind = models.CharField(max_length=16, default="text")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        # The unique (channel, seq) index is also the cursor reads' index.
        constraints = [models.UniqueConstraint(fields=["channel", "seq"], name="channel_post_unique_seq")]
        indexes = [models.Index(fields=["channel", "created_at"], name="channel_post_age")]

    def __str__(self) -> str:
        return f"{self.channel_id}#{self.seq} by {self.sender}"

    def as_row(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "sender": self.sender,
            "content": self.content,
            "kind": self.kind,
            "created_at": timestamp(self.created_at),
        }
