"""get_inbox as one operation: the agent's own read of its inbox, with what that read means.

Reading its inbox is the agent at work, so before the read the deadlines of what the caller may see
are settled (no stale "delivered" is answered) and the leases of the tasks the alias holds are
renewed; after it, the messages answered are marked delivered (hub_tasks.receipts). Only networks
where the caller may write count for the renewal and the receipts: a viewer never reads an inbox
(hub_agents.identity), and no other reader keeps an agent's leases alive or takes its deliveries.
"""

from __future__ import annotations

from django.db import connection
from django.utils import timezone

from hub_agents.actors import Actor
from hub_core.formats import timestamp
from hub_tasks import limits
from hub_tasks.lifecycle import leases_renew
from hub_tasks.models import DeliveredVia
from hub_tasks.reads import FOLDS_RENEWAL, CursorDriver, Driver, run_now
from hub_tasks.receipts import messages_delivered
from hub_tasks.selectors import Row, inbox_pending
from hub_tasks.settled import tasks_settled


def inbox_fetch(
    *,
    actor: Actor,
    alias: str,
    limit: int = limits.INBOX_LIMIT_DEFAULT,
    network_id: str | None = None,
    wait_seconds: float | None = None,
) -> list[Row]:
    """get_inbox: settle, renew the alias's leases, read its unacknowledged messages (high priority
    first, then oldest first; inbox_pending), and mark those read for the first time delivered.
    On PostgreSQL the renewal and the read are one statement (hub_tasks.reads.inbox_read)."""
    tasks_settled(actor=actor)
    writable = actor.writable_networks(network_id)
    if connection.vendor not in FOLDS_RENEWAL:
        leases_renew(network_ids=writable, alias=alias)
    rows = inbox_pending(
        actor=actor, alias=alias, limit=limit, network_id=network_id, wait_seconds=wait_seconds, renew=writable
    )
    return inbox_received(actor=actor, alias=alias, rows=rows)


def inbox_received(*, actor: Actor, alias: str, rows: list[Row]) -> list[Row]:
    """get_inbox's rows, those read for the first time (where the caller may write) marked delivered."""
    return run_now(inbox_received_on(CursorDriver(), actor=actor, alias=alias, rows=rows))


async def inbox_received_on(db: Driver, *, actor: Actor, alias: str, rows: list[Row]) -> list[Row]:
    """inbox_received over a driver (hub_tasks.reads: the fast lane's, on the event loop)."""
    new = [row for row in rows if row["delivered_at"] is None and actor.can_write(row["network_id"])]
    if not new:  # the common repeat: messages already delivered, not acked yet, cost nothing more
        return rows
    now = timezone.now()
    await messages_delivered(
        db,
        network_ids={row["network_id"] for row in new},
        alias=alias,
        messages=[(row["id"], row["type"], row["task_id"]) for row in new],
        via=DeliveredVia.GET_INBOX,
        now=now,
    )
    # A reader racing this one (the agent's SSE stream) may have marked a message a moment before:
    # the row says now, the stored receipt keeps the first.
    for row in new:
        row["delivered_at"], row["delivered_via"] = timestamp(now), DeliveredVia.GET_INBOX.value
    return rows
