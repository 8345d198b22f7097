"""Writing the event log: record in the change's transaction, seal (before its commit, or after
it for what a write published outside hub_core.events.sealed_atomic), prune old rows."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from hub_core import tracing
from hub_core.events import Recorded, Unrecorded
from hub_core.sql import stamp
from hub_events.models import OPERATORS, Event, EventCounter

SEAL_BATCH = 1000


def events_record(*, network_id: str, type: str, payload: dict[str, Any], aliases: Iterable[str]) -> Recorded:
    """One row per audience, the operators' copy first; returns the audiences and the rows' ids.
    One INSERT ... RETURNING for both databases (bulk_create's compiling was half its cost)."""
    aliases = tuple(aliases)
    # With traces on, the event carries the context of its publication: its deliveries join it.
    with tracing.publishing(type, network_id, len(_recipients(aliases))) as trace:
        rows = _rows(Unrecorded(type, payload, aliases, timezone.now(), trace))
        ids = _inserted(network_id, rows)
    return Recorded([row[0] for row in rows], ids)


def _recipients(aliases: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(alias for alias in aliases if alias))


def _rows(event: Unrecorded) -> list[tuple[Any, ...]]:
    """The event's rows, the operators' copy first: audience, "to", type, payload, created_at, trace
    (JSON as JSONField stores it, the time as a statement's parameter)."""
    to = _recipients(event.aliases)
    shared = (json.dumps(to), event.type, json.dumps(event.payload), stamp(event.created_at), event.trace)
    return [(audience, *shared) for audience in [OPERATORS, *to]]


def _inserted(network_id: str, rows: list[tuple[Any, ...]]) -> list[int]:
    """The rows written unsealed, in one INSERT ... RETURNING (both databases); their ids in order."""
    params = [value for row in rows for value in (network_id, *row)]
    with connection.cursor() as cursor:
        cursor.execute(_RECORD.format(rows=", ".join([_ROW] * len(rows))), params)
        return sorted(row[0] for row in cursor.fetchall())


_RECORD = (
    'INSERT INTO hub_events_event (network_id, seq, audience, "to", type, payload, created_at, trace)'
    " VALUES {rows} RETURNING id"
)
_ROW = "(%s, NULL, %s, %s, %s, %s, %s, %s)"


# One statement: the transaction's recorded rows that still exist (a rolled-back savepoint's are
# gone, and take no position: no gap), and the rows of the events it published unrecorded, take
# their positions from the network's counter, whose row lock, held to commit, makes every other
# writer in the network wait to take its own (so positions become visible in seq order). The
# recorded rows are stamped in id order, then the unrecorded ones written after them in
# publication order (each event's operators' copy first).
_SEAL_NOW = """
WITH mine AS (
    SELECT id, row_number() OVER (ORDER BY id) AS n FROM hub_events_event WHERE id = ANY(%(ids)s::bigint[])
), taken AS (
    INSERT INTO hub_events_eventcounter (network_id, last_seq) SELECT %(network)s, count(*) + %(new)s FROM mine
    ON CONFLICT (network_id) DO UPDATE SET last_seq = hub_events_eventcounter.last_seq + EXCLUDED.last_seq
    RETURNING last_seq
), stamped AS (
    UPDATE hub_events_event e SET seq = taken.last_seq - %(new)s - (SELECT count(*) FROM mine) + mine.n
    FROM taken, mine WHERE e.id = mine.id
), written AS (
    INSERT INTO hub_events_event (network_id, seq, audience, "to", type, payload, created_at, trace)
    SELECT %(network)s, taken.last_seq - %(new)s + r.n, r.audience, r.recipients::jsonb, r.type, r.payload::jsonb,
        r.created_at, r.trace
    FROM taken, unnest(%(audience)s::varchar[], %(to)s::text[], %(type)s::varchar[], %(payload)s::text[],
        %(created_at)s::timestamptz[], %(trace)s::varchar[])
        WITH ORDINALITY AS r(audience, recipients, type, payload, created_at, trace, n)
    ORDER BY r.n
)
SELECT last_seq, (SELECT count(*) FROM mine) + %(new)s FROM taken
"""

# SQLite (and PostgreSQL) upsert: take k positions, answer the last one.
_TAKE = """
INSERT INTO hub_events_eventcounter (network_id, last_seq) VALUES (%s, %s)
ON CONFLICT (network_id) DO UPDATE SET last_seq = hub_events_eventcounter.last_seq + excluded.last_seq
RETURNING last_seq
"""
_COLUMNS = ("audience", "to", "type", "payload", "created_at", "trace")


def events_seal_now(*, network_id: str, event_ids: list[int], unrecorded: list[Unrecorded]) -> None:
    """Give the running transaction's rows in the network their feed positions, and write those of
    the events it published unrecorded, before its commit (hub_core.events.sealed_atomic calls it
    last, network by network in one order)."""
    rows = [row for event in unrecorded for row in _rows(event)]
    if connection.vendor == "postgresql":
        columns = [list(column) for column in zip(*rows, strict=True)] or [[] for _ in _COLUMNS]
        params = {"ids": event_ids, "network": network_id, "new": len(rows)}
        with connection.cursor() as cursor:
            cursor.execute(_SEAL_NOW, params | dict(zip(_COLUMNS, columns, strict=True)))
            last, count = cursor.fetchone()
    else:
        if rows:
            _inserted(network_id, rows)
        last, count = _seal_now_single_writer(network_id)
    _prune_now_and_then(network_id, before=last - count, after=last)


def _seal_now_single_writer(network_id: str) -> tuple[int, int]:
    """SQLite lets one transaction write at a time, and this one has written: every unsealed row
    it can see in the network is its own or one a dead process committed, and both are sealed now,
    in id order. (Simpler than passing the ids, which a broadcast makes thousands of.)"""
    pending = list(
        Event.objects.filter(network_id=network_id, seq__isnull=True).order_by("id").values_list("id", flat=True)
    )
    if not pending:
        return 0, 0
    with connection.cursor() as cursor:
        cursor.execute(_TAKE, [network_id, len(pending)])
        (last,) = cursor.fetchone()
    first = last - len(pending)
    Event.objects.bulk_update(
        [Event(id=event_id, seq=first + n) for n, event_id in enumerate(pending, start=1)], ["seq"]
    )
    return last, len(pending)


def _prune_now_and_then(network_id: str, *, before: int, after: int) -> None:
    """Prune old rows after commit, once every SEAL_BATCH positions, not on every write."""
    if after // SEAL_BATCH != before // SEAL_BATCH:
        transaction.on_commit(partial(events_prune, network_id=network_id), robust=True)


@transaction.atomic
def events_seal(*, network_id: str) -> int:
    """Give the network's committed, unsealed events their feed positions, in commit order."""
    EventCounter.objects.bulk_create([EventCounter(network_id=network_id)], ignore_conflicts=True)
    counter = EventCounter.objects.select_for_update().get(network_id=network_id)
    pending = list(Event.objects.filter(network_id=network_id, seq__isnull=True).order_by("id")[:SEAL_BATCH])
    if not pending:
        return 0
    for offset, event in enumerate(pending, start=1):
        event.seq = counter.last_seq + offset
    Event.objects.bulk_update(pending, ["seq"])
    before, counter.last_seq = counter.last_seq, counter.last_seq + len(pending)
    counter.save(update_fields=["last_seq"])
    _prune_now_and_then(network_id, before=before, after=counter.last_seq)
    return len(pending)


def events_seal_all(*, network_id: str) -> int:
    """Seal in batches until nothing is left (a broadcast to 600 agents writes 1200 rows)."""
    sealed = batch = events_seal(network_id=network_id)
    while batch == SEAL_BATCH:
        batch = events_seal(network_id=network_id)
        sealed += batch
    return sealed


def events_seal_leftovers(*, network_id: str) -> int:
    """Seal events a process committed but died before sealing; readers call it now and then."""
    if not Event.objects.filter(network_id=network_id, seq__isnull=True).exists():
        return 0
    return events_seal_all(network_id=network_id)


def events_prune(*, network_id: str) -> int:
    """Delete the network's sealed rows older than the retention."""
    cutoff = timezone.now() - timedelta(seconds=settings.COMMHUB_EVENT_RETENTION_SECONDS)
    deleted, _ = Event.objects.filter(network_id=network_id, created_at__lt=cutoff, seq__isnull=False).delete()
    return deleted
