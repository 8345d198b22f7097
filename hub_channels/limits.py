"""Every limit on what channels accept: stated here once.

The tool specs (hub_tools.channel_tools) build each argument's parser and published schema from
these; the services read the ones that are rules about stored data (the per-channel byte limit, what
a push carries). A channel's own limits (max_members, max_message_bytes, retention) are configured
per channel within these bounds; 0 in a call means "no limit" where a limit may be lifted.
"""

from __future__ import annotations

# Names as AgenticComm has them: letters, digits, hyphens, underscores; 1 to 128 characters.
NAME_MAX = 128
NAME_PATTERN = r"^[A-Za-z0-9_-]{1,128}$"
DESCRIPTION_MAX = 1_000

# A post's size, in UTF-8 bytes: each channel's max_message_bytes, at most 1 MiB (AgenticComm's cap).
MESSAGE_BYTES_MAX = 1_048_576
MESSAGE_BYTES_DEFAULT = 65_536
# What a channel_post event carries of the content: the event log keeps one copy per member, so a
# large post is pushed cut short (payload `truncated`) and read whole with channel_read.
PUSHED_CONTENT_MAX = 2_000

MEMBERS_MAX = 10_000  # the highest max_members a channel may set
INITIAL_MEMBERS_MAX = 100  # aliases channel_create adds at once
RETENTION_POSTS_MAX = 1_000_000  # keep at most this many posts ...
RETENTION_SECONDS_MAX = 366 * 86_400  # ... and/or posts younger than this (a year)

# How many rows a listing answers: at most, and when the caller does not say.
CHANNELS_LIMIT_MAX, CHANNELS_LIMIT_DEFAULT = 500, 100
POSTS_LIMIT_MAX, POSTS_LIMIT_DEFAULT = 500, 50
SEQ_MAX = 2**53  # a post's position: a JSON-safe whole number
