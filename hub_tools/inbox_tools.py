"""An agent's inbox: get_inbox and ack_inbox.

Each spec names its arguments (hub_tools.params; the shared ones in hub_tools.args), the service it
calls and how its answer renders (hub_tools.results); hub_tools.tools gathers every module's specs in
the contract's order."""

from __future__ import annotations

from hub_agents.identity import AGENT
from hub_tasks import limits
from hub_tasks.inbox import inbox_fetch
from hub_tasks.services import (
    inbox_ack,
)
from hub_tools import args as A
from hub_tools import params as P
from hub_tools import results as R
from hub_tools.schema import result, rows
from hub_tools.tool import Tool


def specs() -> list[Tool]:
    """These tools' specs, from the limits, tables and settings as they are now."""
    ALIAS, NETWORK_ID = A.ALIAS, A.NETWORK_ID
    return [
        Tool(
            name="get_inbox",
            title="Get inbox",
            description=(
                "Messages waiting for alias, high priority first, then oldest: id, type (task, message, reply, "
                "broadcast, chained_reply, notice), content, sender, delivered_at. Act on task and broadcast "
                "messages; ack_inbox each so it is not delivered again. With wait_seconds an empty inbox answers "
                "when a message arrives (or empty when the time is up): poll with wait_seconds=30 instead of "
                "sleeping, a few seconds under your client's tool-call timeout (a call cut off returns nothing; "
                "the messages stay). A client that sends a progressToken and accepts text/event-stream gets "
                "progress while it waits."
            ),
            params={
                "alias": ALIAS,
                "limit": A.limit("messages", limits.INBOX_LIMIT_MAX, limits.INBOX_LIMIT_DEFAULT),
                "network_id": NETWORK_ID,
                "wait_seconds": P.number(
                    "If the inbox is empty, wait up to this long for a message.",
                    low=0,
                    high=limits.WAIT_SECONDS_MAX,
                ),
            },
            callers={"alias": AGENT},
            service=inbox_fetch,
            render=R.inbox,
            output=result(messages=rows("Waiting messages, in delivery order.")),
            read_only=True,
        ),
        Tool(
            name="ack_inbox",
            title="Acknowledge an inbox message",
            description=(
                "Acknowledge a get_inbox message so it is not delivered again; a task message moves its task "
                "from delivered to acked. Answer with send_reply or report_completion."
            ),
            params={
                "alias": ALIAS,
                "message_id": P.identifier("The message's id from get_inbox.", required=True),
                "response": P.text("Accepted, not stored; send_reply answers."),
                "idempotency_key": A.IDEMPOTENCY_KEY,
            },
            callers={"alias": AGENT},
            service=inbox_ack,
            render=R.acknowledged,
            output=result(),
            idempotent=True,
        ),
    ]
