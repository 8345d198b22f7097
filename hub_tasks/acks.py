"""ack_inbox's write: the compare-and-swap that acks a message once, written once as SQL for both
databases, over a driver (hub_tasks.reads).

Of two concurrent acks exactly one flips acked_at. An agent acking a message has it, however it
learned the id: a message no read marked delivered is marked so now, and RETURNING says how it was
delivered after this ack ("ack_inbox" only if this one wrote it: a read's receipt is never
overwritten).

A message with no task behind it (send_message, a broadcast, a reply) is acked by this one write:
hub_tasks.services.inbox_ack runs it after its checks, and the fast lane (commhub.hot) runs it first
and leaves everything it does not match (not the caller's, in a network it may not write, acked
already, a task's) to inbox_ack. Where the database folds it (hub_tasks.reads.FOLDS_RENEWAL), the
alias's running leases in the message's network are renewed in the same statement, as get_inbox's
read renews them; elsewhere the caller renews them after.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from hub_core.sql import placeholders, stamp
from hub_tasks.models import DeliveredVia
from hub_tasks.reads import FOLDS_RENEWAL, Driver, lease_renewal

_ACK = (
    "UPDATE hub_tasks_inboxmessage SET acked_at = %s, delivered_to_agent_at = COALESCE(delivered_to_agent_at, %s), "
    "delivered_via = COALESCE(delivered_via, %s) WHERE {match} AND acked_at IS NULL RETURNING {returning}"
)
_UNTASKED = "network_id IN ({networks}) AND id = %s AND to_alias = %s AND task_id IS NULL"


def _stamped(now: datetime) -> list[object]:
    return [stamp(now), stamp(now), DeliveredVia.ACK.value]


async def message_ack_once(db: Driver, *, message_id: str, now: datetime) -> str | None:
    """Ack the message if nothing did yet: how it was delivered, after this ack (None: it was acked)."""
    ack = _ACK.format(match="id = %s", returning="delivered_via")
    marked = await db.rows(ack, [*_stamped(now), message_id])  # one statement: its own transaction
    return marked[0][0] if marked else None


async def untasked_acked(db: Driver, *, networks: Sequence[str], alias: str, message_id: str, now: datetime) -> bool:
    """Ack `alias`'s message `message_id` in `networks` (those where the caller may write) if no task
    is behind it and nothing acked it yet; where FOLDS_RENEWAL, the alias's running leases in its
    network renewed in the same statement. False: it matched nothing and nothing was written."""
    if not networks:
        return False
    ack = _ACK.format(match=_UNTASKED.format(networks=placeholders(len(networks))), returning="network_id")
    params = [*_stamped(now), *networks, message_id, alias]
    if db.vendor in FOLDS_RENEWAL:
        ack = f"WITH acked AS ({ack}), renewed AS ({lease_renewal('SELECT network_id FROM acked')}) SELECT 1 FROM acked"
        params += [stamp(now), alias, stamp(now)]
    return bool(await db.rows(ack, params))  # one statement: its own transaction, or the caller's part
