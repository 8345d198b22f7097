"""Delivery receipts: when an inbox message first reached its agent, and how; when a task was first read.

Written after a read, never by a selector: get_inbox (hub_tasks.inbox.inbox_fetch, after the read,
in the same call) through `messages_delivered`, and the agents' SSE streams (hub_live.fanout, for
the events that name a message, all the streams one reader serves at once) through
`deliveries_mark`; both hold the one rule of what a delivery marks. Cheap on the hot
path: one UPDATE for the tasks, then one for the messages still unmarked, locked first (tasks first:
the hub's lock order), in one transaction; both match only rows still unmarked, so a receipt is set
once and never moved, whichever reader gets there first, and its dispatch-to-delivery latency
(hub_core.metrics) is counted once. Written once as SQL for both databases, over a driver
(hub_tasks.reads): Django's cursor on the ordinary path, the fast lane's pipeline on its own
(commhub.hot).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime

from django.utils import timezone

from hub_core.metrics import deliveries_observed
from hub_core.sql import placeholders, stamp
from hub_tasks.models import DeliveredVia, InboxMessage
from hub_tasks.reads import CursorDriver, Driver, Statement, run_now, stored_time

# Tasks before their inbox rows, the lock order of every write (a cancel locks its task, then
# withdraws its inbox row): the other order deadlocks against it. An unread task's first_read_at is
# set even if another reader marks the message first: both mean the agent has it. first_read_at is
# in no trigger's column list (migrations 0003/0004): this fires none.
_FIRST_READ = (
    "UPDATE hub_tasks_task SET first_read_at = %s "
    "WHERE network_id IN ({networks}) AND task_id IN ({tasks}) AND first_read_at IS NULL"
)
# Only rows still unmarked, so a receipt is set once, and this call learns which messages it is the
# first to deliver (their dispatch-to-delivery latency is counted once). On PostgreSQL they are
# locked first, in one order (readers marking several at once do not deadlock); a reader racing
# this one waits, then finds them marked. SQLite has one writer at a time: nothing to lock.
_DELIVERED = (
    "UPDATE hub_tasks_inboxmessage SET delivered_to_agent_at = %s, delivered_via = %s "
    "WHERE id IN ({unmarked}) AND delivered_to_agent_at IS NULL RETURNING type, created_at"
)
_UNMARKED = {
    "postgresql": "SELECT id FROM hub_tasks_inboxmessage WHERE {match} ORDER BY id FOR UPDATE",
    "sqlite": "SELECT id FROM hub_tasks_inboxmessage WHERE {match}",
}
_MATCH = "network_id IN ({networks}) AND (id, to_alias) IN (VALUES {pairs}) AND delivered_to_agent_at IS NULL"


async def _mark(
    db: Driver,
    network_ids: Collection[str],
    owners: dict[str, str],
    task_ids: list[str],
    via: DeliveredVia,
    now: datetime | None,
) -> int:
    """Mark these messages delivered to their aliases now (those not marked yet; `owners`: message id
    -> the alias it went to), and the tasks of the task messages among them first read (`task_ids`,
    only those still unread are written); returns how many messages this call marked. Over a driver
    (hub_tasks.reads): one transaction (one commit for both tables; on SQLite one write lock, one
    sync), in one round trip on the fast lane's pipeline."""
    if not owners or not network_ids:
        return 0
    now = now or timezone.now()
    networks = list(network_ids)
    statements: list[Statement] = []
    if task_ids:
        first_read = _FIRST_READ.format(networks=placeholders(len(networks)), tasks=placeholders(len(task_ids)))
        statements.append((first_read, [stamp(now), *networks, *task_ids]))
    match = _MATCH.format(networks=placeholders(len(networks)), pairs=", ".join(["(%s, %s)"] * len(owners)))
    delivered = _DELIVERED.format(unmarked=_UNMARKED[db.vendor].format(match=match))
    pairs = [value for pair in owners.items() for value in pair]
    statements.append((delivered, [stamp(now), via.value, *networks, *pairs]))
    marked = await db.written(statements)
    dispatched = [stored_time(at) for kind, at in marked if kind == InboxMessage.Type.TASK]
    db.after_commit(lambda: deliveries_observed(dispatched, via=via, now=now))
    return len(marked)


async def messages_delivered(
    db: Driver,
    *,
    network_ids: Collection[str],
    alias: str,
    messages: Iterable[tuple[str, str, str | None]],
    via: DeliveredVia,
    now: datetime | None = None,
) -> int:
    """These messages of `alias` reached it (each as (message_id, type, task_id)): mark them, and only
    a task message marks its task read (a notice or a chained reply about it does not). Over a driver:
    Django's cursor (`run_now`), or the fast lane's pool on the event loop."""
    deliveries = [(alias, message_id, kind, task_id) for message_id, kind, task_id in messages]
    return await _deliveries(db, network_ids, deliveries, via, now)


def deliveries_mark(
    *,
    network_ids: Collection[str],
    deliveries: Iterable[tuple[str, str, str, str | None]],
    via: DeliveredVia,
    now: datetime | None = None,
) -> int:
    """messages_delivered for several agents at once, in one transaction (a process's streams of one
    network, hub_live.fanout): each delivery is (alias, message_id, type, task_id)."""
    return run_now(_deliveries(CursorDriver(), network_ids, list(deliveries), via, now))


async def _deliveries(
    db: Driver,
    network_ids: Collection[str],
    deliveries: Iterable[tuple[str, str, str, str | None]],
    via: DeliveredVia,
    now: datetime | None,
) -> int:
    deliveries = list(deliveries)
    owners = {message_id: alias for alias, message_id, _, _ in deliveries}
    tasks = [task_id for _, _, kind, task_id in deliveries if kind == InboxMessage.Type.TASK and task_id]
    return await _mark(db, network_ids, owners, tasks, via, now)
