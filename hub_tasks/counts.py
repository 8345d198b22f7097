"""Tasks by status per network (list_tasks' `stats`, the dashboard's counts), kept as rows to sum.

Database triggers (migration 0003) insert a TaskCount row (+1 for the new status, -1 for the old one)
in the transaction of every insert, status change and delete of a task, whatever code or SQL does it.
Rows are only inserted, never updated: concurrent sends into one network never wait on a shared
counter row, and no lock is taken that could wait in a cycle with the tasks' own row locks.

A network's rows grow with each change; `counts_fold` replaces them by one row per status. Each
process folds a network after every FOLD_EVERY changes it made there, after they commit, so a network
holds at most about FOLD_EVERY x 2 x processes rows between folds: `stats` sums those, not the tasks.
"""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models import Max, Sum

from hub_tasks.models import TaskCount

FOLD_EVERY = 256
# PostgreSQL advisory lock class (with hashtext(network_id)): one folder per network at a time.
FOLD_LOCK_CLASS = 7412

_changes: dict[str, int] = {}  # per network, the changes this process made since it last folded it

_FOLD_POSTGRESQL = """
    WITH folded AS (DELETE FROM hub_tasks_taskcount WHERE network_id = %s RETURNING status, n)
    INSERT INTO hub_tasks_taskcount (network_id, status, n)
    SELECT %s, status, SUM(n) FROM folded GROUP BY status HAVING SUM(n) <> 0
"""


def counts_changed(network_id: str) -> None:
    """A task's status changed (or a task was created) in this transaction: fold now and then."""
    changes = _changes.get(network_id, 0) + 1
    if changes < FOLD_EVERY:
        _changes[network_id] = changes
        return
    _changes[network_id] = 0
    transaction.on_commit(lambda: counts_fold(network_id))


def counts_fold(network_id: str) -> None:
    """Replace the network's count rows by one per status (statuses that sum to zero go)."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_xact_lock(%s, hashtext(%s))", [FOLD_LOCK_CLASS, network_id])
                if not cursor.fetchone()[0]:
                    return  # another process is folding this network right now
                # One statement, one snapshot: the rows it sums are exactly the rows it deletes.
                cursor.execute(_FOLD_POSTGRESQL, [network_id, network_id])
            return
        # SQLite: the transaction holds the write lock from BEGIN, so no row arrives in between.
        rows = TaskCount.objects.filter(network_id=network_id)
        last = rows.aggregate(last=Max("id"))["last"]
        if last is None:
            return
        rows = rows.filter(id__lte=last)
        totals = rows.values("status").annotate(total=Sum("n")).order_by("status")
        folded = [TaskCount(network_id=network_id, status=t["status"], n=t["total"]) for t in totals if t["total"]]
        rows.delete()
        TaskCount.objects.bulk_create(folded)
