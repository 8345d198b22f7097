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

import json
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any, Protocol, TypeVar

from django.db import connection, transaction
from django.db.models import DateTimeField, DurationField, JSONField
from django.db.models.base import ModelState
from django.utils.dateparse import parse_datetime

from hub_core.formats import timestamp
from hub_core.sql import placeholders, stamp
from hub_tasks.models import (
    LEASED,
    TASK_COLUMNS,
    UNTIL_RELEASED,
    InboxMessage,
    Question,
    Task,
    TaskAttempt,
    TaskEvent,
)
from hub_tasks.results import Row

T = TypeVar("T")

# The vendors whose read statements renew the alias's leases themselves.
FOLDS_RENEWAL = frozenset({"postgresql"})


Statement = tuple[str, Sequence[Any]]


class Driver(Protocol):
    vendor: str

    async def rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]: ...

    async def written(self, statements: Sequence[Statement]) -> list[tuple[Any, ...]]:
        """The statements in one transaction (within the caller's, if it is in one); the last one's rows."""
        ...

    def after_commit(self, then: Callable[[], None]) -> None:
        """Run `then` once what `written` wrote is committed."""
        ...


class CursorDriver:
    """Django's connection of this thread (the test's transaction, SQLite, the ORM's pool)."""

    def __init__(self) -> None:
        self.vendor = connection.vendor

    async def rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    async def written(self, statements: Sequence[Statement]) -> list[tuple[Any, ...]]:
        with transaction.atomic(), connection.cursor() as cursor:
            for sql, params in statements:
                cursor.execute(sql, params)
            return cursor.fetchall()

    def after_commit(self, then: Callable[[], None]) -> None:
        transaction.on_commit(then)


def run_now(read: Coroutine[Any, Any, T]) -> T:
    """A read over `CursorDriver` run to completion here: it never waits on anything."""
    try:
        read.send(None)
    except StopIteration as done:
        return done.value
    read.close()
    raise AssertionError("a read over Django's cursor suspended")


def stored_time(value: Any) -> datetime | None:
    """A stored time as an aware datetime (SQLite's raw cursor gives naive UTC, or text)."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if value is not None and value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value


# --- get_inbox -----------------------------------------------------------------------------------

_MESSAGE_COLUMNS = (
    "m.id, m.type, m.priority, m.content, m.context, m.from_session, m.task_id, m.created_at, m.network_id, "
    "m.delivered_to_agent_at, m.delivered_via"
)
# A task message carries its task's caps for the run (InboxMessage.as_row).
_CAPS = (
    f"CASE WHEN m.type = '{InboxMessage.Type.TASK.value}' THEN t.budget_usd END, "
    f"CASE WHEN m.type = '{InboxMessage.Type.TASK.value}' THEN t.budget_tokens END"
)
_ORDER = (
    # hub_tasks.models.priority_rank, then oldest first (InboxQuerySet.in_delivery_order).
    "CASE WHEN m.priority = 'high' THEN 0 WHEN m.priority = 'normal' THEN 1 ELSE 2 END, m.created_at, m.id"
)


def _inbox_statement(networks: Sequence[str], alias: str, limit: int) -> tuple[str, list[Any]]:
    """The page of messages first, then their tasks' caps: joined to the whole page of pending rows,
    a prepared statement's generic plan (which knows no alias) expected hundreds of them and hashed
    every task of the table (4 ms at 10,000 tasks, against 0.14 ms), once statistics existed."""
    sql = (
        f"SELECT {_MESSAGE_COLUMNS}, {_CAPS} FROM (SELECT {_MESSAGE_COLUMNS} FROM hub_tasks_inboxmessage m "
        f"WHERE m.acked_at IS NULL AND m.network_id IN ({placeholders(len(networks))}) AND m.to_alias = %s "
        f"ORDER BY {_ORDER} LIMIT %s) m LEFT JOIN hub_tasks_task t ON t.task_id = m.task_id ORDER BY {_ORDER}"
    )
    return sql, [*networks, alias, limit]


def lease_renewal(networks: str) -> str:
    """hub_tasks.lifecycle.leases_renew as SQL: every lease the alias holds in `networks` (SQL: a
    list of placeholders, or a subquery) and still runs, from now. Its parameters: now, those of
    `networks`, the alias, now."""
    return (
        "UPDATE hub_tasks_task SET lease_expires_at = %s + lease "
        f"WHERE network_id IN ({networks}) AND to_name = %s AND {lease_running()} RETURNING 1"
    )


# The leased statuses written into the statement, not passed: a prepared statement's generic plan
# (the fast lane's, after five runs) can use the partial index task_leased only where the planner
# sees its condition, and a parameter hides it: with them as parameters, PostgreSQL's generic plan
# walked every task of the network (0.7-1.5 ms at 3,000 tasks, against 0.01 ms).
_LEASED = ", ".join(f"'{status}'" for status in sorted(status.value for status in LEASED))


def lease_running(table: str = "") -> str:
    """SQL: a task (of `table`, an alias such as "t", or the statement's only one) whose lease still
    runs at the one parameter it takes, now (hub_tasks.lifecycle.leases_renew's `held`)."""
    column = f"{table}." if table else ""
    return f"{column}status IN ({_LEASED}) AND {column}lease_expires_at > %s"


def _inbox_row(row: tuple[Any, ...]) -> Row:
    return {
        "id": row[0],
        "type": row[1],
        "priority": row[2],
        "content": row[3],
        "context": row[4],
        "from_session": row[5],
        "task_id": row[6],
        "created_at": timestamp(stored_time(row[7])),
        "network_id": row[8],
        "delivered_at": timestamp(stored_time(row[9])),
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
        renewal = lease_renewal(placeholders(len(renew)))
        sql, params = f"WITH renewed AS ({renewal}) {sql}", [stamp(now), *renew, alias, stamp(now), *params]
    return [_inbox_row(row) for row in await db.rows(sql, params)]


# --- get_task ------------------------------------------------------------------------------------

# The one string the databases differ in: a list of rows as a JSON array of arrays, ordered, in one
# subquery (`{cols}` the row's columns, `{json}` those of them stored as JSON text on SQLite).
_LISTS = {
    "postgresql": "(SELECT json_agg(json_build_array({cols}) ORDER BY {order}) FROM {table} WHERE {where})",
    "sqlite": (
        "(SELECT json_group_array(json(x)) FROM (SELECT json_array({cols}) AS x FROM {table} WHERE {where} "
        "ORDER BY {order}))"
    ),
}
# A JSON column inside a list: PostgreSQL embeds jsonb as it is; SQLite stores text, read back as JSON.
_JSON_IN_LIST = {"postgresql": "{column}", "sqlite": "json({column})"}

_EVENT = ("kind", "from_status", "to_status", "actor", "detail", "created_at", "question_id")
_ATTEMPT = (
    "number", "alias", "outcome", "result", "ended_by", "delivered_at", "acked_at", "started_at", "ended_at",
    "tokens_in", "tokens_out", "cost_usd", "model", "duration_seconds",
)  # fmt: skip
_QUESTION = (
    "id", "task_id", "asked_by", "text", "options", "asked_at", "answer", "answered_by", "answered_at",
    "answer_message_id",
)  # fmt: skip


@cache
def _task_columns() -> tuple[str, ...]:
    """The task's stored columns as_row reads (lease_seconds is the lease's)."""
    names = {field.attname for field in Task._meta.concrete_fields}
    return tuple(column for column in (*TASK_COLUMNS, "lease") if column in names)


@cache
def _fields(model: Any) -> dict[str, Any]:
    return {field.attname: field for field in model._meta.concrete_fields}


@cache
def _task_sql(vendor: str) -> str:
    """The task by its primary key alone, its network checked on the row read: a prepared statement's
    generic plan (the fast lane's) given `network_id IN (...)` too walked every task of the network
    by its index while the table had no statistics yet (a new database: 0.5 ms at 3,300 tasks)."""
    lists = _LISTS[vendor]

    def listed(table: str, columns: Sequence[str], where: str, order: str, *, json_columns: Sequence[str] = ()) -> str:
        cols = ", ".join(
            _JSON_IN_LIST[vendor].format(column=column) if column in json_columns else column for column in columns
        )
        return lists.format(cols=cols, table=table, where=where, order=order)

    selected = ", ".join(f"t.{column}" for column in _task_columns())
    return (
        f"SELECT {selected}, "
        + listed("hub_tasks_taskdependency", ["depends_on_id"], "task_id = t.task_id", "id")
        + ", "
        + listed("hub_tasks_taskdependency", ["task_id"], "depends_on_id = t.task_id", "id")
        + ", "
        + listed("hub_tasks_taskevent", _EVENT, "task_id = t.task_id", "id")
        + ", "
        + listed("hub_tasks_taskattempt", _ATTEMPT, "task_id = t.task_id", "number")
        + ", "
        + listed("hub_tasks_question", _QUESTION, "task_id = t.task_id", "asked_at, id", json_columns=["options"])
        + " FROM hub_tasks_task t WHERE t.task_id = %s"
    )


def _model_row(model: Any, names: tuple[str, ...], values: Sequence[Any], *, stored: bool = False) -> Any:
    """An unsaved instance of `model` from read values, for its own as_row: times made aware, a
    duration from SQLite's microseconds, JSON text parsed where it was `stored` (a column; inside a
    list the statement already made it JSON). Built as Model.__init__ builds it (each field's value
    set on the instance, the fields not read given their defaults), without its per-call walk over
    the fields: a get_task renders three or more of these."""
    instance = model.__new__(model)
    instance._state = ModelState()
    attributes = instance.__dict__
    converters, unread = _converters(model, names, stored)
    for name, convert, value in zip(names, converters, values, strict=True):
        attributes[name] = value if value is None else convert(value)
    for field in unread:
        attributes[field.attname] = field.get_default()
    return instance


@cache
def _converters(model: Any, names: tuple[str, ...], stored: bool) -> tuple[list[Callable[[Any], Any]], list[Any]]:
    """For each name read, how its value becomes the field's; and the model's fields not read."""
    fields = _fields(model)
    return [_converter(fields[name], stored) for name in names], [
        field for attname, field in fields.items() if attname not in names
    ]


def _converter(field: Any, stored: bool) -> Callable[[Any], Any]:
    if isinstance(field, DateTimeField):
        return stored_time
    if isinstance(field, DurationField):
        return lambda value: timedelta(microseconds=value) if isinstance(value, int) else field.to_python(value)
    if isinstance(field, JSONField):
        return lambda value: json.loads(value) if stored and isinstance(value, str) else value
    return field.to_python


def _listed_rows(value: Any) -> list[Any]:
    if value is None:
        return []
    return json.loads(value) if isinstance(value, str) else value


async def task_read(db: Driver, *, networks: Sequence[str], task_id: str) -> dict[str, Any] | None:
    """get_task's read, one statement: the task's row as Task.as_row renders it (with attempt_count,
    depends_on and dependents) and its events, attempts and questions, as their as_row render
    them; None when no task of `networks` has this id."""
    if not networks:
        return None
    found = await db.rows(_task_sql(db.vendor), [task_id])
    if not found:
        return None
    (row,) = found
    columns = _task_columns()
    task = _model_row(Task, columns, row[: len(columns)], stored=True)
    if task.network_id not in networks:
        return None
    depends_on, dependents, events, attempts, questions = row[len(columns) :]
    attempts = _listed_rows(attempts)
    shown = task.as_row()
    if task.expires_at == UNTIL_RELEASED:
        shown["expires_at"] = None  # held: its deadline is set when it is released
    return {
        "task": {
            **shown,
            "attempt_count": len(attempts),  # every attempt is listed
            "depends_on": [value for (value,) in _listed_rows(depends_on)],
            "dependents": [value for (value,) in _listed_rows(dependents)],
        },
        "events": [_model_row(TaskEvent, _EVENT, values).as_row() for values in _listed_rows(events)],
        "attempts": [_model_row(TaskAttempt, _ATTEMPT, values).as_row() for values in attempts],
        "questions": [_model_row(Question, _QUESTION, values).as_row() for values in _listed_rows(questions)],
    }
