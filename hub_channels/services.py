"""Every write to channels: create, join, leave, configure, post.

The rules, by channel type (POSTING_ROLES and PUBLIC_TYPES in hub_channels.models hold them):

- direct: exactly two members, both named at creation; nobody joins or leaves; either one posts.
- group: anyone in the network joins (up to max_members); members post and read.
- broadcast: anyone joins; only owners post; every reader of the network reads (members get pushes).
- pubsub: anyone subscribes (joins, role subscriber); anyone in the network publishes, subscribed or
  not; subscribers receive and read, the publisher is not pushed its own post (AgenticComm's publish).

The creator is the channel's first owner. Owners, and the network's owners and admins, configure it.
Every write needs a role that may write in the channel's network; a channel of a network the caller
cannot read does not exist for it (channel_not_found).

Lock order: the channel's row first (select_for_update), then its members and posts. A post takes
its position from the locked row, so positions only grow and a post commits before the next one is
numbered: a reader paging by seq never later finds a smaller one it skipped. Retention (keep at most
N posts, and/or posts younger than D seconds) is applied in the same transaction as the post (and
as a configure that tightens it), so no post outside the limits outlives the write that put it out.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from hub_agents.actors import Actor
from hub_agents.audit import audit_record
from hub_agents.models import AuditEntry
from hub_channels import limits
from hub_channels.models import (
    POSTING_ROLES,
    Channel,
    ChannelMember,
    ChannelPost,
    ChannelType,
    MemberRole,
)
from hub_channels.selectors import ChannelDetail, channel_detail, channel_not_found, not_a_member
from hub_core.errors import HubError, permission_denied, unusable_argument
from hub_core.events import EventType, HubEvent, publish, sealed_atomic

# How a limit argument reads: None left out, 0 lifted (no limit), else the limit.
Limit = int | None


def _direct_fixed(channel: Channel) -> HubError:
    return HubError(
        "direct_channel",
        f"Channel {channel.name} is direct: it has exactly its two members; create a group channel for more.",
        status=409,
        channel_id=channel.id,
    )


def _lifted(value: Limit) -> int | None:
    return None if not value else value


def _locked(actor: Actor, channel_id: str) -> Channel:
    """The channel's row, locked, in a network the actor may write in (else not found or refused)."""
    channel = Channel.objects.select_for_update().filter(network_id__in=actor.readable_networks(), pk=channel_id)
    found = channel.first()
    if found is None:
        raise channel_not_found(channel_id)
    actor.check_write(found.network_id)
    return found


def _member(channel: Channel, alias: str) -> ChannelMember | None:
    return ChannelMember.objects.filter(channel=channel, alias=alias).first()


def _retain(channel: Channel, *, now: datetime) -> int:
    """Delete the posts outside the channel's retention; how many. The caller holds the row lock."""
    outside = Q(pk__in=[])
    if channel.retention_max_posts is not None:
        outside |= Q(seq__lte=channel.last_seq - channel.retention_max_posts)
    if channel.retention_seconds is not None:
        outside |= Q(created_at__lte=now - timedelta(seconds=channel.retention_seconds))
    # Only the keys: the delete collects the posts (their search entries go with them), never their text.
    _, deleted = ChannelPost.objects.filter(outside, channel=channel).only("pk").delete()
    return deleted.get(ChannelPost._meta.label, 0)  # not what went with them (their search entries)


def channels_retention_sweep() -> int:
    """Delete the posts past their channel's age limit in every channel that has one (the sweep
    command): reads already hide them, this lets them go when nobody posts. Each channel under its
    row lock, in its own transaction; a channel with nothing to let go is not locked. How many."""
    deleted = 0
    aged = Channel.objects.filter(retention_seconds__isnull=False).values_list("pk", "retention_seconds")
    for channel_id, seconds in list(aged):
        now = timezone.now()
        if not ChannelPost.objects.filter(
            channel_id=channel_id, created_at__lte=now - timedelta(seconds=seconds)
        ).exists():
            continue
        with transaction.atomic():
            channel = Channel.objects.select_for_update().filter(pk=channel_id).first()
            if channel is not None:  # deleted meanwhile
                deleted += _retain(channel, now=now)
    return deleted


@sealed_atomic
def channel_create(
    *,
    actor: Actor,
    name: str,
    alias: str,
    type: str = ChannelType.GROUP,
    description: str | None = None,
    members: list[str] | None = None,
    max_members: Limit = None,
    max_message_bytes: int | None = None,
    retention_max_posts: Limit = None,
    retention_seconds: Limit = None,
    network_id: str | None = None,
) -> ChannelDetail:
    """channel_create: a channel named uniquely in the network; `alias` is its first owner, `members`
    join it at once (a direct channel: exactly one other alias, and no max_members)."""
    network_id = actor.writable_network(network_id)
    others = [member for member in members or [] if member != alias]
    if type == ChannelType.DIRECT:
        if len(others) != 1:
            raise unusable_argument("members", "must name exactly one alias besides yours for a direct channel")
        if max_members is not None:
            raise unusable_argument("max_members", "is always 2 for a direct channel; leave it out")
        max_members = 2
    if max_members and 1 + len(others) > max_members:
        raise unusable_argument("members", f"names more aliases than max_members ({max_members}) allows")
    try:
        with transaction.atomic():  # a savepoint: a taken name leaves the caller's transaction usable
            channel = Channel.objects.create(
                network_id=network_id,
                name=name,
                type=type,
                description=description or "",
                created_by=alias,
                max_members=_lifted(max_members),
                max_message_bytes=max_message_bytes or limits.MESSAGE_BYTES_DEFAULT,
                retention_max_posts=_lifted(retention_max_posts),
                retention_seconds=_lifted(retention_seconds),
            )
    except IntegrityError:
        taken = Channel.objects.filter(network_id=network_id, name=name).values_list("pk", flat=True).first()
        raise HubError(
            "channel_exists",
            f"Network {network_id} has a channel named {name!r} already ({taken}); join it or pick another name.",
            status=409,
            channel_id=taken,
        ) from None
    audit_record(
        network_id=network_id,
        action=AuditEntry.Action.CHANNEL_CREATED,
        actor=actor.label,
        target=f"channel {channel.name} ({channel.id})",
        type=type,
        owner=alias,
        members=others,
    )
    role = MemberRole.SUBSCRIBER if type == ChannelType.PUBSUB else MemberRole.MEMBER
    ChannelMember.objects.bulk_create(
        [
            ChannelMember(channel=channel, alias=alias, role=MemberRole.OWNER),
            *(ChannelMember(channel=channel, alias=other, role=role) for other in others),
        ]
    )
    return channel_detail(channel)


@sealed_atomic
def channel_join(*, actor: Actor, channel_id: str, alias: str) -> dict[str, object]:
    """channel_join: the alias becomes a member (of a pub/sub channel: a subscriber), while the
    channel has room. A direct channel takes nobody else."""
    channel = _locked(actor, channel_id)
    if channel.type == ChannelType.DIRECT:
        raise _direct_fixed(channel)
    if _member(channel, alias) is not None:
        raise HubError(
            "already_member",
            f"{alias!r} is already a member of channel {channel.name} ({channel.id}).",
            status=409,
            channel_id=channel.id,
        )
    count = ChannelMember.objects.filter(channel=channel).count()  # exact: joins queue on the row lock
    if channel.max_members is not None and count >= channel.max_members:
        raise HubError(
            "channel_full",
            f"Channel {channel.name} has reached its {channel.max_members} members; an owner may raise "
            "max_members with channel_configure.",
            status=409,
            channel_id=channel.id,
        )
    role = MemberRole.SUBSCRIBER if channel.type == ChannelType.PUBSUB else MemberRole.MEMBER
    ChannelMember.objects.create(channel=channel, alias=alias, role=role)
    return {"channel_id": channel.id, "alias": alias, "role": role, "members": count + 1}


@sealed_atomic
def channel_leave(*, actor: Actor, channel_id: str, alias: str) -> dict[str, object]:
    """channel_leave: the alias stops being a member (and receiving the channel's posts). A direct
    channel keeps its two members."""
    channel = _locked(actor, channel_id)
    if channel.type == ChannelType.DIRECT:
        raise _direct_fixed(channel)
    deleted, _ = ChannelMember.objects.filter(channel=channel, alias=alias).delete()
    if not deleted:
        raise not_a_member(channel, alias, status=409)  # nothing to leave: a conflict, not a refusal
    return {"channel_id": channel.id, "alias": alias, "members": ChannelMember.objects.filter(channel=channel).count()}


@sealed_atomic
def channel_configure(
    *,
    actor: Actor,
    channel_id: str,
    alias: str | None = None,
    description: str | None = None,
    max_members: Limit = None,
    max_message_bytes: int | None = None,
    retention_max_posts: Limit = None,
    retention_seconds: Limit = None,
) -> ChannelDetail:
    """channel_configure: change what is given, keep the rest (0 lifts a limit). By an owner of the
    channel (`alias`) or an owner or admin of the network. A tightened retention applies at once; a
    lowered max_members only stops new joins."""
    channel = _locked(actor, channel_id)
    if not actor.can_administer(channel.network_id):
        member = _member(channel, alias) if alias is not None else None
        if member is None or member.role != MemberRole.OWNER:
            owners = ChannelMember.objects.filter(channel=channel, role=MemberRole.OWNER).order_by("alias")
            raise permission_denied(
                f"Only channel {channel.name}'s owners ({', '.join(owners.values_list('alias', flat=True)) or 'none'}"
                ", passed as alias) and the network's owners and admins configure it."
            )
    if channel.type == ChannelType.DIRECT and max_members is not None:
        raise _direct_fixed(channel)
    changed = {
        "description": description,
        "max_members": max_members,
        "max_message_bytes": max_message_bytes,
        "retention_max_posts": retention_max_posts,
        "retention_seconds": retention_seconds,
    }
    fields = [field for field, value in changed.items() if value is not None]
    for field in fields:
        value = changed[field]
        setattr(channel, field, value if field in ("description", "max_message_bytes") else _lifted(value))  # type: ignore[arg-type]
    channel.save(update_fields=fields)
    removed = _retain(channel, now=timezone.now())
    audit_record(
        network_id=channel.network_id,
        action=AuditEntry.Action.CHANNEL_CONFIGURED,
        actor=actor.label + (f" as {alias}" if alias else ""),
        target=f"channel {channel.name} ({channel.id})",
        changed={field: changed[field] for field in fields},
        posts_removed=removed,
    )
    return channel_detail(channel, removed=removed)


@sealed_atomic
def channel_post(*, actor: Actor, channel_id: str, alias: str, content: str, kind: str = "text") -> dict[str, object]:
    """channel_post: a post at the channel's next position, pushed (event channel_post) to its
    members but the sender. Who may post: see the module's rules; content is at most the channel's
    max_message_bytes in UTF-8. Retention is applied in the same transaction."""
    channel = _locked(actor, channel_id)
    now = timezone.now()  # under the lock: times follow positions, so a reader by `since` skips nothing
    allowed = POSTING_ROLES[channel.type]
    if allowed is not None:
        member = _member(channel, alias)
        if member is None:
            raise not_a_member(channel, alias)
        if member.role not in allowed:
            raise permission_denied(
                f"Only the owners of {channel.type} channel {channel.name} post in it; {alias!r} is a {member.role}."
            )
    size = len(content.encode())
    if size > channel.max_message_bytes:
        raise HubError(
            "message_too_large",
            f"The post is {size} bytes; channel {channel.name} takes at most {channel.max_message_bytes} "
            "(UTF-8). Split it, or ask an owner to raise max_message_bytes.",
            status=409,  # schema-valid input the channel's own limit refuses: a conflict, not a bad request
            max_message_bytes=channel.max_message_bytes,
        )
    channel.last_seq += 1
    channel.save(update_fields=["last_seq"])
    post = ChannelPost.objects.create(
        channel=channel, seq=channel.last_seq, sender=alias, content=content, kind=kind, created_at=now
    )
    removed = _retain(channel, now=now)
    others = ChannelMember.objects.filter(channel=channel).exclude(alias=alias).order_by("alias")
    audience = tuple(others.values_list("alias", flat=True))
    publish(
        HubEvent(
            type=EventType.CHANNEL_POST,
            network_id=channel.network_id,
            audience=audience,
            payload={
                "channel_id": channel.id,
                "name": channel.name,
                "channel_type": channel.type,
                "seq": post.seq,
                "sender": alias,
                "kind": kind,
                "content": content[: limits.PUSHED_CONTENT_MAX],
                "truncated": len(content) > limits.PUSHED_CONTENT_MAX,
            },
        )
    )
    return {
        "channel_id": channel.id,
        "seq": post.seq,
        "created_at": post.as_row()["created_at"],
        "delivered_to": len(audience),
        "removed": removed,
    }
