"""The agents' hot reads (get_inbox's), each written once as SQL for both databases, over a driver.

A read here is an `async def` taking a driver (`await db.rows(sql, params)`), so that one statement
and one rendering of its rows serve every caller:

- the ordinary, synchronous path (hub_tools, so MCP through Django, REST, the dashboard, SQLite,
  tests inside their transactions) passes `CursorDriver`, over Django's own connection: its
  coroutine never suspends, and `run_now` runs it to completion on the calling thread;
- the PostgreSQL fast lane (commhub.hot) passes a psycopg async pool's driver, on the event loop.

Django's cursor takes %s placeholders on both databases, and psycopg does too. Where the databases
must differ it is one SQL string: PostgreSQL renews the alias's running leases in the read's own
statement (a data-modifying CTE, so a get_inbox is one round trip); SQLite, where even an UPDATE
that matches nothing takes the database's write lock, keeps hub_tasks.lifecycle.leases_renew's
read-first renewal, which its caller runs before the read (`FOLDS_RENEWAL`).
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from django.db import connection
from django.utils.dateparse import parse_datetime

from hub_core.formats import timestamp
from hub_tasks.models import LEASED, InboxMessage
from hub_tasks.results import Row

T = TypeVar("T")

# The vendors whose read statements renew the alias's leases themselves.
FOLDS_RENEWAL = frozenset({"postgresql"})


class Driver(Protocol):
    vendor: str

    async def rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]: ...


class CursorDriver:
    """Django's connection of this thread (the test's transaction, SQLite, the ORM's pool)."""

    def __init__(self) -> None:
        self.vendor = connection.vendor

    async def rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()


def run_now(read: Coroutine[Any, Any, T]) -> T:
    """A read over `CursorDriver` run to completion here: it never waits on anything."""
    try:
        read.send(None)
    except StopIteration as done:
        return done.value
    read.close()
    raise AssertionError("a read over Django's cursor suspended")


def _at(value: Any) -> datetime | None:
    """A stored time as an aware datetime (SQLite's raw cursor gives naive UTC, or text)."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if value is not None and value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value


def _listed(count: int) -> str:
    return ", ".join(["%s"] * count)


# --- get_inbox -----------------------------------------------------------------------------------

_INBOX_COLUMNS = (
    "m.id, m.type, m.priority, m.content, m.context, m.from_session, m.task_id, m.created_at, m.network_id, "
    "m.delivered_to_agent_at, m.delivered_via, "
    # A task message carries its task's caps for the run (InboxMessage.as_row).
    f"CASE WHEN m.type = '{InboxMessage.Type.TASK.value}' THEN t.budget_usd END, "
    f"CASE WHEN m.type = '{InboxMessage.Type.TASK.value}' THEN t.budget_tokens END"
)
_ORDER = (
    # hub_tasks.models.priority_rank, then oldest first (InboxQuerySet.in_delivery_order).
    "CASE WHEN m.priority = 'high' THEN 0 WHEN m.priority = 'normal' THEN 1 ELSE 2 END, m.created_at, m.id"
)


def _inbox_statement(networks: Sequence[str], alias: str, limit: int) -> tuple[str, list[Any]]:
    sql = (
        f"SELECT {_INBOX_COLUMNS} FROM hub_tasks_inboxmessage m "
        "LEFT JOIN hub_tasks_task t ON t.task_id = m.task_id "
        f"WHERE m.acked_at IS NULL AND m.network_id IN ({_listed(len(networks))}) AND m.to_alias = %s "
        f"ORDER BY {_ORDER} LIMIT %s"
    )
    return sql, [*networks, alias, limit]


def _renewal(networks: Sequence[str], alias: str, now: datetime) -> tuple[str, list[Any]]:
    """hub_tasks.lifecycle.leases_renew as SQL: every lease the alias holds and still runs, from now."""
    leased = sorted(status.value for status in LEASED)
    sql = (
        "UPDATE hub_tasks_task SET lease_expires_at = %s + lease "
        f"WHERE network_id IN ({_listed(len(networks))}) AND to_name = %s "
        f"AND status IN ({_listed(len(leased))}) AND lease_expires_at > %s RETURNING 1"
    )
    return sql, [now, *networks, alias, *leased, now]


def _inbox_row(row: tuple[Any, ...]) -> Row:
    return {
        "id": row[0],
        "type": row[1],
        "priority": row[2],
        "content": row[3],
        "context": row[4],
        "from_session": row[5],
        "task_id": row[6],
        "created_at": timestamp(_at(row[7])),
        "network_id": row[8],
        "delivered_at": timestamp(_at(row[9])),
        "delivered_via": row[10],
        "budget_usd": row[11],
        "budget_tokens": row[12],
    }


async def inbox_read(
    db: Driver, *, networks: Sequence[str], alias: str, limit: int, renew: Sequence[str] = (), now: datetime
) -> list[Row]:
    """The alias's unacknowledged messages in `networks`, high priority first, then oldest first;
    where the database folds it (FOLDS_RENEWAL), the leases it holds in `renew` renewed in the same
    statement (`renew` is among `networks`). No network: nothing to read, no statement."""
    if not networks:
        return []
    sql, params = _inbox_statement(networks, alias, limit)
    if renew and db.vendor in FOLDS_RENEWAL:
        renewal, renewal_params = _renewal(renew, alias, now)
        sql, params = f"WITH renewed AS ({renewal}) {sql}", [*renewal_params, *params]
    return [_inbox_row(row) for row in await db.rows(sql, params)]
