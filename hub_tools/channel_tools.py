"""The channel tools' specs (issue 18), gathered by hub_tools.tools after the hub's other own tools.

AgenticComm's channel tools under names that clash with none of the contract's: create_channel,
list_channels, join_channel, leave_channel, get_channel_info, set_channel_config, send_message and
receive_messages on a channel, subscribe and publish (a pubsub channel's join and post), broadcast (a
broadcast channel's post). A channel is addressed by its id (chn_…); channel_list finds it by name.
Who may do what is in hub_channels.services.
"""

from __future__ import annotations

import re
from typing import Any

from hub_agents.identity import MEMBER, MEMBER_FILLED
from hub_channels import limits
from hub_channels.models import ChannelType
from hub_channels.selectors import channel_info, channel_posts, channel_rows
from hub_channels.services import channel_configure, channel_create, channel_join, channel_leave, channel_post
from hub_core import validate
from hub_core.errors import invalid_argument
from hub_tools import args as A
from hub_tools import params as P
from hub_tools.params import Param
from hub_tools.schema import nullable, result, rows
from hub_tools.tool import Tool

# AgenticComm's message types, as a post's kind.
KINDS = ("text", "command", "query", "response", "notification", "acknowledgment", "error")


def _name(description: str) -> Param:
    """A channel's name: 1 to 128 letters, digits, hyphens or underscores (AgenticComm's rule)."""

    def parse(field: str, value: object) -> str:
        name = validate.required_text(field, value, max_len=limits.NAME_MAX)
        if not re.fullmatch(limits.NAME_PATTERN, name):
            shown = validate.shown(name)
            raise invalid_argument(field, f"must be 1 to 128 letters, digits, hyphens or underscores (got {shown})")
        return name

    published = {
        "type": "string",
        "description": description,
        "minLength": 1,
        "maxLength": limits.NAME_MAX,
        "pattern": limits.NAME_PATTERN,
    }
    return Param(published, parse, required=True)


def _fields(answer: dict[str, Any]) -> dict[str, Any]:
    return dict(answer)


def _channels(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {"channels": found}


CONFIG = {
    "type": "object",
    "description": "max_members, max_message_bytes, retention_max_posts, retention_seconds (null: no limit)",
}
DETAIL = {
    "channel_id": {"type": "string"},
    "network_id": {"type": "string"},
    "name": {"type": "string"},
    "type": {"type": "string", "enum": ChannelType.values},
    "description": {"type": "string"},
    "created_by": {"type": "string"},
    "created_at": {"type": "string"},
    "member_count": {"type": "integer"},
    "members": rows("alias, role (owner, member or subscriber), joined_at; owners first."),
    "config": CONFIG,
    "post_count": {"type": "integer", "description": "posts kept"},
    "first_seq": {**nullable("integer"), "description": "the oldest kept post's position; null: none kept"},
    "last_seq": {"type": "integer", "description": "the last position given to a post"},
}


def specs() -> list[Tool]:
    ALIAS, NETWORK_ID = A.ALIAS, A.NETWORK_ID
    CHANNEL_ID = P.identifier("The channel's id (chn_…).", required=True)

    def limit(what: str, high: int) -> Param:
        return P.whole(f"{what} 0: no limit.", low=0, high=high)

    MAX_MEMBERS = limit("At most this many members (direct: 2).", limits.MEMBERS_MAX)
    MAX_BYTES = P.whole(
        f"The largest post, in UTF-8 bytes (default {limits.MESSAGE_BYTES_DEFAULT}).",
        low=1,
        high=limits.MESSAGE_BYTES_MAX,
    )
    RETENTION_POSTS = limit("Keep at most this many posts, deleting the oldest.", limits.RETENTION_POSTS_MAX)
    RETENTION_SECONDS = limit("Keep posts younger than this many seconds.", limits.RETENTION_SECONDS_MAX)
    return [
        Tool(
            name="channel_create",
            title="Create a channel",
            description=(
                "Create a channel in the network, you (alias) its first owner. Types: group (members talk; the "
                "default), direct (you and the one alias in members), broadcast (owners post, members receive, "
                "the network reads), pubsub (subscribers join; anyone posts). Names are unique in the network. "
                "Returns the channel with its channel_id."
            ),
            params={
                "name": _name("Letters, digits, hyphens or underscores."),
                "alias": ALIAS,
                "type": P.choice("direct, group (default), broadcast or pubsub.", ChannelType.values, default="group"),
                "description": P.text("What the channel is for.", limits.DESCRIPTION_MAX),
                "members": P.text_list(
                    "Aliases that join at once (direct: the other one).",
                    max_items=limits.INITIAL_MEMBERS_MAX,
                    max_len=validate.ID_MAX,
                    unique=True,
                ),
                "max_members": MAX_MEMBERS,
                "max_message_bytes": MAX_BYTES,
                "retention_max_posts": RETENTION_POSTS,
                "retention_seconds": RETENTION_SECONDS,
                "network_id": NETWORK_ID,
            },
            callers={"alias": MEMBER},
            service=channel_create,
            render=_fields,
            output=result(**DETAIL),
        ),
        Tool(
            name="channel_list",
            title="List channels",
            description="The channels of your networks by name: type, member count, last position, limits.",
            params={
                "alias": P.identifier("Only channels this alias is a member of."),
                "type": P.choice("Only channels of this type.", ChannelType.values),
                "name": P.identifier("Only the channel with this name."),
                "network_id": NETWORK_ID,
                "limit": A.limit("channels", limits.CHANNELS_LIMIT_MAX, limits.CHANNELS_LIMIT_DEFAULT),
            },
            service=channel_rows,
            render=_channels,
            output=result(channels=rows("By network, then name; each with last_post_at (null: no post yet).")),
            read_only=True,
        ),
        Tool(
            name="channel_join",
            title="Join a channel",
            description=(
                "Join a channel as alias (pubsub: subscribe); its posts are then pushed to your /events stream. "
                "Refused when full or direct."
            ),
            params={"channel_id": CHANNEL_ID, "alias": ALIAS},
            callers={"alias": MEMBER},
            service=channel_join,
            render=_fields,
            output=result(
                channel_id={"type": "string"},
                alias={"type": "string"},
                role={"type": "string"},
                members={"type": "integer", "description": "members now"},
            ),
        ),
        Tool(
            name="channel_leave",
            title="Leave a channel",
            description="Leave a channel (pubsub: unsubscribe); a direct channel keeps its two members.",
            params={"channel_id": CHANNEL_ID, "alias": ALIAS},
            callers={"alias": MEMBER},
            service=channel_leave,
            render=_fields,
            output=result(
                channel_id={"type": "string"},
                alias={"type": "string"},
                members={"type": "integer", "description": "members now"},
            ),
            destructive=True,
        ),
        Tool(
            name="channel_info",
            title="Get a channel",
            description="A channel's members and roles, limits, posts kept and the positions of the first and last.",
            params={"channel_id": CHANNEL_ID},
            service=channel_info,
            render=_fields,
            output=result(**DETAIL),
            read_only=True,
        ),
        Tool(
            name="channel_configure",
            title="Configure a channel",
            description=(
                "Change a channel's description and limits (left out: unchanged; 0 lifts a limit), as a channel "
                "owner (alias) or a network owner or admin. A tighter retention deletes at once (`removed`)."
            ),
            params={
                "channel_id": CHANNEL_ID,
                "alias": P.identifier("The owner acting (a network owner or admin may omit it)."),
                "description": P.text("What the channel is for.", limits.DESCRIPTION_MAX),
                "max_members": MAX_MEMBERS,
                "max_message_bytes": MAX_BYTES,
                "retention_max_posts": RETENTION_POSTS,
                "retention_seconds": RETENTION_SECONDS,
            },
            callers={"alias": MEMBER_FILLED},
            service=channel_configure,
            render=_fields,
            output=result(**DETAIL, removed={"type": "integer", "description": "posts retention deleted now"}),
            idempotent=True,
        ),
        Tool(
            name="channel_post",
            title="Post to a channel",
            description=(
                "Post to a channel as alias (group and direct: members; broadcast: owners; pubsub: anyone). The "
                "post gets the next position (seq) and is pushed to the other members. At most the channel's "
                "max_message_bytes."
            ),
            params={
                "channel_id": CHANNEL_ID,
                "alias": ALIAS,
                # At most 64 Ki characters in a call, whatever a channel's byte limit: a schema of 1 Mi
                # characters defeats schema-driven fuzzers (schemathesis falls back to non-object bodies).
                "content": P.text("The post.", limits.MESSAGE_BYTES_DEFAULT, required=True),
                "kind": P.choice("What the post is (default text).", KINDS, default="text"),
            },
            callers={"alias": MEMBER},
            service=channel_post,
            render=_fields,
            output=result(
                channel_id={"type": "string"},
                seq={"type": "integer", "description": "the post's position"},
                created_at={"type": "string"},
                delivered_to={"type": "integer", "description": "members pushed the post"},
                removed={"type": "integer", "description": "posts retention deleted"},
            ),
        ),
        Tool(
            name="channel_read",
            title="Read a channel",
            description=(
                "A channel's posts, oldest first, after position `after` (page with next_after: nothing lost or "
                "repeated) and/or since a time. Members read (broadcast: the whole network); first_seq is the "
                "oldest kept."
            ),
            params={
                "channel_id": CHANNEL_ID,
                "alias": P.identifier("The member reading."),
                "after": P.whole("Only posts after this position (seq).", low=0, high=limits.SEQ_MAX),
                "since": P.moment("Only posts created after this ISO 8601 time."),
                "limit": A.limit("posts", limits.POSTS_LIMIT_MAX, limits.POSTS_LIMIT_DEFAULT),
            },
            callers={"alias": MEMBER_FILLED},
            service=channel_posts,
            render=_fields,
            output=result(
                channel_id={"type": "string"},
                posts=rows("Oldest first: seq, sender, content, kind, created_at."),
                next_after={"type": "integer", "description": "pass as after for the next page"},
                last_seq={"type": "integer"},
                first_seq={**nullable("integer"), "description": "the oldest kept post's position"},
            ),
            read_only=True,
        ),
    ]
