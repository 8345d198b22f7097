"""Each network's earliest deadline, so that settling deadlines costs nothing until one passes.

A "deadline" is whatever makes a task fall due: a waiting task's expiry, a held task's retry_at or
(before its first delivery, once no dependency holds it) not_before, an acked or running task's
lease_expires_at (`due_at` of `_due` below; migration 0014's triggers state the same per row). A
task waiting for a slot of a cap or for a budget has neither held time until released (by
hub_tasks.caps or hub_tasks.budgets, never by a sweep). A lease renewal only moves a lease later, so
it never touches this row.

`TaskDeadline` holds, per network, a time that no waiting task's deadline is earlier than. Database
triggers (migration 0003) lower it in the transaction of every write that makes a task waiting or
moves a waiting task's deadline (a send, a retry, a reassign, and any SQL that writes the row), so
every process sees it; `deadlines_raise` lifts it to the earliest deadline still waiting once a sweep
has run. It is only ever too early, never too late: a read that finds it in the future may skip the
sweep, because no task can be overdue.

Each process keeps a copy per network for `LEASE` seconds, so the reads that settle deadlines
(get_inbox, get_task, list_tasks, ...) usually ask the database nothing. A write of this process that
may lower a deadline drops the copy at once. A write by another process is seen when the lease ends:
it gives its task at least its TTL or lease (1 s or more) or a retry's backoff (0.5 s or more,
hub_tasks.limits) from when it began, so a copy read before that write committed still ends before
the task falls due, unless the write's transaction ran longer than that less LEASE (or the
processes' clocks differ by that much). A reassign keeps the task's
deadline; hub_tasks.services expires a task handed on past it in the same transaction, so no process
ever reads it as delivered.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import OperationalError, connection, transaction
from django.db.models import Min

from hub_tasks.models import LEASED, WAITING, Task, TaskDeadline, TaskStatus

# Seconds a process trusts its copy of a network's deadline (see above for why well under a second).
LEASE = 0.25
# PostgreSQL advisory lock class (with hashtext(network_id)): the triggers hold it shared while a
# write that may lower a deadline is open, `deadlines_raise` exclusively. Migration 0003 states it too.
LOCK_CLASS = 7411
# How long a raise waits for those writes to commit; past it the deadline simply stays early.
RAISE_WAIT = "200ms"


@dataclass(frozen=True, slots=True)
class _Copy:
    due_at: datetime | None
    read_at: float  # time.monotonic() just before the database was read
    generation: int


_copies: dict[str, _Copy] = {}
# A copy counts only under the generation it was read in: forgetting a network gives it a new one,
# so a read that raced a write of this process (and would store what was true before it) is unused.
_generations: dict[str, int] = {}
_tickets = itertools.count(1)  # next() on it is atomic: two threads never draw the same generation


def deadline_may_lower(network_id: str) -> None:
    """A write of this process may give a task in the network an earlier deadline than the copy
    knows: forget the copy now (this transaction's own later reads) and again once it commits."""
    _forget(network_id)
    transaction.on_commit(lambda: _forget(network_id))


def _forget(network_id: str) -> None:
    _generations[network_id] = next(_tickets)


def networks_past_deadline(network_ids: Iterable[str], now: datetime) -> list[str]:
    """The networks in which a waiting task's deadline may have passed by `now`, in id order."""
    networks = sorted(set(network_ids))
    due: dict[str, datetime | None] = {}
    unknown = []
    started = time.monotonic()
    for network in networks:
        copy = _copies.get(network)
        # "Read within the last LEASE", not "until": a clock that went back (a test moving time)
        # must not keep a copy forever.
        if copy is not None and copy.generation == _generations.get(network, 0) and 0 <= started - copy.read_at < LEASE:
            due[network] = copy.due_at
        else:
            unknown.append(network)
    if unknown:
        generations = {network: _generations.get(network, 0) for network in unknown}
        stored = dict(TaskDeadline.objects.filter(network_id__in=unknown).values_list("network_id", "due_at"))
        for network in unknown:
            # Read inside a caller's transaction, it may include that transaction's own lowering,
            # never a raise (raises wait for the commit): too early at worst, so safe to share.
            due[network] = stored.get(network)
            _copies[network] = _Copy(due[network], started, generations[network])
    return [network for network in networks if due[network] is not None and due[network] <= now]


def networks_known_clear(network_ids: Iterable[str], now: datetime) -> bool:
    """Whether this process's copies alone say no task in these networks may have fallen due by
    `now` (networks_past_deadline would then find none, and ask the database nothing)."""
    started = time.monotonic()
    for network in network_ids:
        copy = _copies.get(network)
        if copy is None or copy.generation != _generations.get(network, 0) or not 0 <= started - copy.read_at < LEASE:
            return False
        if copy.due_at is not None and copy.due_at <= now:
            return False
    return True


def deadlines_raise(network_ids: Iterable[str]) -> None:
    """After a sweep: lift each network's deadline to the earliest one still waiting (null: none).

    Inside a caller's transaction this waits for its commit (its sweep may yet roll back).
    """
    networks = sorted(set(network_ids))
    if _in_transaction():
        transaction.on_commit(lambda: deadlines_raise(networks))
        return
    try:
        with transaction.atomic():
            if connection.vendor == "postgresql":
                # A writer that may lower a deadline holds the lock shared until it commits, and its
                # task is invisible to this transaction until then: wait for it, or the raise would
                # step over its deadline. (On SQLite a transaction takes the write lock at BEGIN.)
                with connection.cursor() as cursor:
                    cursor.execute("SELECT set_config('lock_timeout', %s, true)", [RAISE_WAIT])
                    for network in networks:  # in id order: two raises never wait on each other in a cycle
                        cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [LOCK_CLASS, network])
            earliest = _due(networks)
            for network in TaskDeadline.objects.filter(network_id__in=networks).values_list("network_id", flat=True):
                TaskDeadline.objects.filter(network_id=network).update(due_at=earliest.get(network))
    except OperationalError as refusal:
        if getattr(refusal.__cause__, "sqlstate", None) != "55P03":  # lock_not_available: stay early
            raise
    for network in networks:
        _forget(network)


def _due(networks: list[str]) -> dict[str, datetime]:
    """Per network, the earliest time a task in it falls due (networks with none left out).

    Four small reads, each on its partial index (hub_tasks.models.Task.Meta), not one over every task."""
    tasks = Task.objects.filter(network_id__in=networks)
    # Migration 0014's triggers: a task waiting for a cap or a budget falls due at neither of its
    # held times (those release it, not the sweep); its expires_at is UNTIL_RELEASED meanwhile.
    released = tasks.filter(status=TaskStatus.CREATED, waiting_cap=None, waiting_budget=None)
    kinds = [
        tasks.filter(status__in=WAITING).values("network_id").annotate(at=Min("expires_at")),
        released.filter(retry_at__isnull=False).values("network_id").annotate(at=Min("retry_at")),
        # Migration 0005's triggers: a task never delivered and waiting for no dependency.
        released.filter(not_before__isnull=False, delivered_at__isnull=True, dependencies_pending=None)
        .values("network_id")
        .annotate(at=Min("not_before")),
        tasks.filter(status__in=LEASED, lease_expires_at__isnull=False)
        .values("network_id")
        .annotate(at=Min("lease_expires_at")),
    ]
    due: dict[str, datetime] = {}
    for rows in kinds:
        for row in rows:
            network, at = row["network_id"], row["at"]
            if at is not None and (network not in due or at < due[network]):
                due[network] = at
    return due


def _in_transaction() -> bool:
    """Inside a transaction a caller opened; as `atomic(durable=True)` tells, the one a test case
    wraps around each test does not count."""
    blocks = connection.atomic_blocks
    return bool(blocks) and not getattr(blocks[-1], "_from_testcase", False)
