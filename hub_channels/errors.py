"""hub_channels' error codes (hub_core.errors catalogue)."""

from __future__ import annotations

from hub_core.errors import codes_declare

codes_declare(
    __name__,
    {
        "channel_not_found": (404, "No such channel in your networks."),
        "channel_exists": (409, "The network has a channel of that name already."),
        "not_a_member": (403, "The alias is not a member of the channel (join it with channel_join)."),
        "already_member": (409, "The alias is a member of the channel already."),
        "channel_full": (409, "The channel has reached its max_members."),
        "direct_channel": (409, "A direct channel has exactly its two members: none joins or leaves."),
        "message_too_large": (409, "The post is over the channel's max_message_bytes."),
    },
)
