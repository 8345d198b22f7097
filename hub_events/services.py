"""Writing the event log: record in the change's transaction, seal after commit, prune old rows."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from hub_events.models import OPERATORS, Event, EventCounter

SEAL_BATCH = 1000


def events_record(*, network_id: str, type: str, payload: dict[str, Any], aliases: Iterable[str]) -> list[str]:
    """One row per audience, the operators' copy first; returns the audiences written."""
    to = list(dict.fromkeys(alias for alias in aliases if alias))
    audiences = [OPERATORS, *to]
    now = timezone.now()
    Event.objects.bulk_create(
        Event(network_id=network_id, audience=audience, to=to, type=type, payload=payload, created_at=now)
        for audience in audiences
    )
    return audiences


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
    if counter.last_seq // SEAL_BATCH != before // SEAL_BATCH:  # now and then, not on every write
        events_prune(network_id=network_id)
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
    cutoff = timezone.now() - timedelta(seconds=settings.COMMHUB_EVENT_RETENTION_SECONDS)
    deleted, _ = Event.objects.filter(network_id=network_id, created_at__lt=cutoff, seq__isnull=False).delete()
    return deleted
