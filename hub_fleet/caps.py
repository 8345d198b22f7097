"""Concurrency caps, the operator's side: cap_set, cap_delete (owners and admins, audited) and
cap_list. How a cap holds and releases work is hub_tasks.caps (and hub_tasks.lifecycle)."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from hub_agents.actors import Actor
from hub_agents.audit import audit_record
from hub_agents.models import AuditEntry
from hub_core.errors import HubError, invalid_argument
from hub_core.events import sealed_atomic
from hub_fleet.results import Row
from hub_tasks.lifecycle import cap_waiters_readmit, caps_release
from hub_tasks.models import Cap, CapScope, CapSlot, Task, TaskStatus

# The audit log's action for every change of a cap (`change` in its detail says which).
AUDIT_ACTION = AuditEntry.Action.CAP_CHANGED


def _audit(actor: Actor, cap: Cap, change: str, **detail: object) -> None:
    audit_record(
        network_id=cap.network_id, action=AUDIT_ACTION, actor=actor.label, target=f"cap {cap.label} ({cap.pk})",
        change=change, **detail,
    )  # fmt: skip


def _value(scope: str, value: str | None) -> str:
    if scope == CapScope.ALL:
        if value:
            raise invalid_argument("value", 'is not taken by scope "all": leave it out')
        return ""
    if not value:
        raise invalid_argument("value", f"names the {scope} the cap counts: give it")
    return value


def _rows(caps: list[Cap]) -> list[Row]:
    """Each cap as cap_list shows it: with its slots used now and the tasks waiting for one."""
    ids = [cap.pk for cap in caps]
    used = dict(CapSlot.objects.filter(cap__in=ids).values_list("cap").annotate(n=Count("pk")).order_by())
    waiting = dict(
        Task.objects.filter(waiting_cap__in=ids, status=TaskStatus.CREATED)
        .values_list("waiting_cap")
        .annotate(n=Count("pk"))
        .order_by()
    )
    return [{**cap.as_row(used.get(cap.pk, 0)), "waiting": waiting.get(cap.pk, 0)} for cap in caps]


def _row(cap: Cap) -> Row:
    return _rows([cap])[0]


@sealed_atomic
def cap_set(*, actor: Actor, scope: str, limit: int, value: str | None = None, network_id: str | None = None) -> Row:
    """cap_set: at most `limit` tasks of the scope with their agents at once (all runs, a runtime's,
    or a skill's); a cap of that scope is changed. A raised cap releases waiting tasks at once."""
    network = actor.writable_network(network_id)
    actor.check_administer(network, changes="caps")
    value = _value(scope, value)
    now = timezone.now()
    cap = Cap.objects.select_for_update().filter(network_id=network, scope=scope, value=value).first()
    if cap is None:
        try:
            with transaction.atomic():  # a savepoint: a concurrent cap_set of the same scope may win
                cap = Cap.objects.create(
                    network_id=network, scope=scope, value=value, limit=limit, created_by=actor.label, created_at=now,
                    updated_at=now,
                )  # fmt: skip
        except IntegrityError:
            cap = Cap.objects.select_for_update().get(network_id=network, scope=scope, value=value)
        else:
            _audit(actor, cap, "created", limit=limit)
            return _row(cap)
    if cap.limit != limit:
        _audit(actor, cap, "changed", limit=limit, was=cap.limit)
        cap.limit, cap.updated_at = limit, now
        cap.save(update_fields=["limit", "updated_at"])
        caps_release(network, now=now)
    return _row(cap)


def _lock(actor: Actor, cap_id: str) -> Cap:
    cap = Cap.objects.select_for_update().filter(pk=cap_id, network_id__in=actor.readable_networks()).first()
    if cap is None:
        raise HubError("cap_not_found", f"No cap {cap_id!r} in your networks; cap_list shows them.", status=404)
    actor.check_administer(cap.network_id, changes="caps")
    return cap


@sealed_atomic
def cap_delete(*, actor: Actor, cap_id: str) -> None:
    """cap_delete: the cap goes; the tasks that waited for its slots wait for no more (or for
    another cap of theirs that is full)."""
    cap = _lock(actor, cap_id)
    now = timezone.now()
    _audit(actor, cap, "deleted", limit=cap.limit)
    network = cap.network_id
    waiting = list(Task.objects.filter(waiting_cap=cap.pk, status=TaskStatus.CREATED).values_list("pk", flat=True))
    cap.delete()
    cap_waiters_readmit(network, waiting, now=now)


def caps_list(*, actor: Actor, network_id: str | None = None) -> list[Row]:
    """cap_list: the caps of the caller's networks, each with its slots used now and the tasks
    waiting for one (three reads, however many caps)."""
    caps = Cap.objects.filter(network_id__in=actor.readable_networks(network_id)).order_by(
        "network_id", "scope", "value"
    )
    return _rows(list(caps))
