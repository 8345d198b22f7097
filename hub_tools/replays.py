"""Replay keys: a call made with an idempotency_key records once (Stripe's idempotency keys).

An agent's node journals every report before it sends it and sends it again until the hub answers
(issue 25's outbox); an answer lost on the way back must not make the report count twice (a second
completion row, a second reply, a second event). The first call with a key claims a ReplayKey row
before it runs, runs in the same transaction and stores its answer there; a later call with the same
key from the same caller in the same network gets that answer, unchanged, and writes nothing (it is
not even counted against the write limit). Two concurrent first calls: the unique constraint makes
the second's claim wait for the first's commit and fail, and it answers the first's answer. A
refused call stores nothing (its transaction rolls back): sent again, it runs again. The same key
with other arguments is refused (`idempotency_key_reused`). Keys older than REPLAY_KEY_DAYS are
deleted by the sweep (`replay_keys_prune`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from hub_agents.actors import Actor
from hub_core.errors import HubError
from hub_core.events import sealed_atomic
from hub_tools.models import REPLAY_KEY_DAYS, ReplayKey

# The argument that carries the key, on each tool that takes one.
KEY = "idempotency_key"


def replayed_or_run(
    *, actor: Actor, tool: str, key: str, arguments: dict[str, Any], run: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """The stored answer of the call first made with `key`, or `run()`'s (the result object), stored."""
    scope = {"network": _network_of(actor, arguments), "caller": actor.key, "key": key}
    fingerprint = _fingerprint(tool, arguments)
    with sealed_atomic():
        try:
            with transaction.atomic():  # a savepoint: a concurrent first call may hold the key
                claimed = ReplayKey.objects.create(**scope, tool=tool, fingerprint=fingerprint, answer=None)
        except IntegrityError:
            return _stored(ReplayKey.objects.get(**scope), tool, fingerprint)
        answer = run()
        claimed.answer = answer
        claimed.save(update_fields=["answer"])
    return answer


def _stored(first: ReplayKey, tool: str, fingerprint: str) -> dict[str, Any]:
    if first.fingerprint != fingerprint:
        made = "another tool" if first.tool != tool else "other arguments"
        raise HubError(
            "idempotency_key_reused",
            f"idempotency_key {first.key!r} was used at {first.created_at.isoformat()} for {first.tool} with "
            f"{made}; a key names one call: use a new key for a new call.",
            status=409,
        )
    return first.answer


def _network_of(actor: Actor, arguments: dict[str, Any]) -> str:
    """The call's network where the call or the caller says it ("" otherwise: the caller's key alone)."""
    named = arguments.get("network_id")
    if isinstance(named, str) and named in actor.roles:
        return named
    if len(actor.roles) == 1:
        (only,) = actor.roles
        return only
    return ""


def _fingerprint(tool: str, arguments: dict[str, Any]) -> str:
    given = {name: value for name, value in arguments.items() if name != KEY}
    text = json.dumps([tool, given], sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    # surrogatepass: a lone surrogate (refused later, by its argument's check) must not crash the digest.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def replay_keys_prune(*, now: Any = None) -> int:
    """Delete replay keys older than REPLAY_KEY_DAYS (the sweep); how many."""
    before = (now or timezone.now()) - timedelta(days=REPLAY_KEY_DAYS)
    deleted, _ = ReplayKey.objects.filter(created_at__lt=before).delete()
    return deleted
