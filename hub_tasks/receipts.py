"""Delivery receipts: when an inbox message first reached its agent, and how; when a task was first read.

Written after a read, never by a selector: get_inbox (hub_tasks.inbox.inbox_fetch, after the read,
in the same call) through `messages_delivered`, and the agents' SSE streams (hub_live.fanout, for
the events that name a message, all the streams one reader serves at once) through
`deliveries_mark`; both hold the one rule of what a delivery marks. Cheap on the hot
path: one UPDATE for the tasks, then the messages still unmarked locked and marked (tasks first: the
hub's lock order); both match only rows still unmarked, so a receipt is set once and never moved,
whichever reader gets there first, and its dispatch-to-delivery latency (hub_core.metrics) is
counted once.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from hub_core.metrics import deliveries_observe
from hub_tasks.models import DeliveredVia, InboxMessage, Task


def receipts_mark(
    *,
    network_ids: Collection[str],
    alias: str,
    message_ids: Iterable[str],
    task_ids: Iterable[str] = (),
    via: DeliveredVia,
    now: datetime | None = None,
) -> int:
    """Mark these messages of `alias` delivered to it now (those not marked yet), and the tasks of its
    task messages among them first read; returns how many messages this call marked.

    `task_ids`: the tasks of the task messages in `message_ids` (a notice or a chained reply about a
    task is not its agent reading it); only those still unread are written.
    """
    return _mark(network_ids, {message_id: alias for message_id in message_ids}, list(task_ids), via, now)


def _mark(
    network_ids: Collection[str], owners: dict[str, str], task_ids: list[str], via: DeliveredVia, now: datetime | None
) -> int:
    """receipts_mark for messages of any number of aliases (`owners`: message id -> the alias it went to)."""
    if not owners or not network_ids:
        return 0
    now = now or timezone.now()
    # One transaction: one commit for both rows (on SQLite one write lock, one sync). Tasks before
    # their inbox rows, the lock order of every write (a cancel locks its task, then withdraws its
    # inbox row): the other order deadlocks against it. An unread task's first_read_at is set even
    # if another reader marks the message first: both mean the agent has it.
    with transaction.atomic():
        if task_ids:
            # first_read_at is in no trigger's column list (migrations 0003/0004): this fires none.
            Task.objects.filter(network_id__in=list(network_ids), pk__in=task_ids, first_read_at__isnull=True).update(
                first_read_at=now
            )
        # Locked first (in one order, for readers marking several at once), so this call knows which
        # messages it is the first to deliver (a reader racing it waits, then finds them marked):
        # their dispatch-to-delivery latency is counted once.
        locked = (
            InboxMessage.objects.select_for_update()
            .filter(
                network_id__in=list(network_ids),
                to_alias__in=set(owners.values()),
                pk__in=list(owners),
                delivered_to_agent_at__isnull=True,
            )
            .order_by("pk")
            .values_list("pk", "to_alias", "type", "created_at")
        )
        first = [(pk, kind, at) for pk, to, kind, at in locked if owners[pk] == to]
        if not first:
            return 0
        marked = InboxMessage.objects.filter(pk__in=[pk for pk, _, _ in first]).update(
            delivered_to_agent_at=now, delivered_via=via
        )
        deliveries_observe([at for _, kind, at in first if kind == InboxMessage.Type.TASK], via=via, now=now)
    return marked


def messages_delivered(
    *,
    network_ids: Collection[str],
    alias: str,
    messages: Iterable[tuple[str, str, str | None]],
    via: DeliveredVia,
    now: datetime | None = None,
) -> int:
    """These messages of `alias` reached it (each as (message_id, type, task_id)): receipts_mark them,
    and only a task message marks its task read (a notice or a chained reply about it does not)."""
    return deliveries_mark(
        network_ids=network_ids,
        deliveries=[(alias, message_id, kind, task_id) for message_id, kind, task_id in messages],
        via=via,
        now=now,
    )


def deliveries_mark(
    *,
    network_ids: Collection[str],
    deliveries: Iterable[tuple[str, str, str, str | None]],
    via: DeliveredVia,
    now: datetime | None = None,
) -> int:
    """messages_delivered for several agents at once, in one transaction (a process's streams of one
    network, hub_live.fanout): each delivery is (alias, message_id, type, task_id)."""
    deliveries = list(deliveries)
    return _mark(
        network_ids,
        {message_id: alias for alias, message_id, _, _ in deliveries},
        [task_id for _, _, kind, task_id in deliveries if kind == InboxMessage.Type.TASK and task_id],
        via,
        now,
    )
