"""What statements written as SQL (not compiled by the ORM) share, on both databases and drivers."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from django.db import DatabaseError, connection, models
from django.db.models.signals import post_save


def stamp(moment: datetime) -> Any:
    """A time as a statement's parameter, in the form Django stores it (SQLite: naive UTC text;
    PostgreSQL: the aware datetime). No query: the vendor's adapter only."""
    return connection.ops.adapt_datetimefield_value(moment)


def placeholders(count: int) -> str:
    """`count` parameters in a SQL list: "%s, %s, ..." (both databases, both drivers)."""
    return ", ".join(["%s"] * count)


def insert(instance: models.Model) -> None:
    """`instance.save(force_insert=True)` for a new row, without the ORM compiling the statement
    each call: the same INSERT (every column the model has, each value as its field prepares it
    for the database; an auto primary key given by the database and read back), the instance left
    as save() leaves it, and post_save sent as save() sends it (hub_search indexes through it).
    For models of one table (no parent model) and no pre_save receiver (none is connected in the hub)."""
    model = type(instance)
    fields, auto = _insert_fields(model)
    values = [field.get_db_prep_save(field.pre_save(instance, True), connection) for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(_insert_sql(model, connection.vendor), values)
        if auto is not None:
            (key,) = cursor.fetchone()
            setattr(instance, auto.attname, key)
    instance._state.adding, instance._state.db = False, connection.alias
    post_save.send(model, instance=instance, created=True, update_fields=None, raw=False, using=connection.alias)


@cache
def _insert_fields(model: type[models.Model]) -> tuple[list[models.Field], models.Field | None]:
    """The columns an insert writes, and the auto primary key it reads back (None: it has none)."""
    auto = _one_table(model).auto_field
    return [field for field in model._meta.concrete_fields if field is not auto], auto


@cache
def _insert_sql(model: type[models.Model], vendor: str) -> str:
    fields, auto = _insert_fields(model)
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in fields)
    returning = f" RETURNING {quote(auto.column)}" if auto is not None else ""
    return f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({placeholders(len(fields))}){returning}"


def update(instance: models.Model, fields: Sequence[str]) -> None:
    """`instance.save(update_fields=fields)` without the ORM compiling the statement each call: the
    same UPDATE of those columns of the instance's row (each value as its field prepares it), the
    same refusal when no row was there, and post_save sent as save() sends it (hub_search re-indexes
    through it). No fields, nothing done, as save() does. Same limits as `insert`."""
    if not fields:
        return
    model, names = type(instance), tuple(fields)
    columns = _update_fields(model, names)
    values = [field.get_db_prep_save(field.pre_save(instance, False), connection) for field in columns]
    values.append(model._meta.pk.get_db_prep_value(instance.pk, connection))
    with connection.cursor() as cursor:
        cursor.execute(_update_sql(model, names, connection.vendor), values)
        if cursor.rowcount == 0:
            raise DatabaseError("Save with update_fields did not affect any rows.")
    instance._state.adding, instance._state.db = False, connection.alias
    post_save.send(
        model, instance=instance, created=False, update_fields=frozenset(names), raw=False, using=connection.alias
    )


@cache
def _update_fields(model: type[models.Model], names: tuple[str, ...]) -> list[models.Field]:
    meta = _one_table(model)
    return [meta.get_field(name) for name in names]


@cache
def _update_sql(model: type[models.Model], names: tuple[str, ...], vendor: str) -> str:
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(field.column)} = %s" for field in _update_fields(model, names))
    meta = model._meta
    return f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {quote(meta.pk.column)} = %s"


def _one_table(model: type[models.Model]) -> Any:
    """The model's options, for a model stored in one table (one with a parent model is not)."""
    if model._meta.parents:
        raise TypeError(f"{model.__name__} inherits from another model: its rows span tables")
    return model._meta
