"""Every write of outbound webhooks: subscriptions changed by their network's owners and admins,
and the delivery engine that sends the operators' feed to them (docs/adr/0018).

Delivery, per subscription, one deliverer at a time (a lease on its row):
  claim the lease (compare-and-swap) → read the feed after the cursor → POST the first wanted event
  outside any transaction → under the row lock, record the attempt and move the cursor past it
  (2xx) or schedule the retry (anything else) → next event, renewing the lease before each POST.
The cursor moves only after a 2xx, so every event is sent at least once, in feed order; a killed
deliverer's lease runs out and the next one resumes from the cursor.
"""

from __future__ import annotations

import os
import random
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, Min, OuterRef, Q
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Now
from django.utils import timezone

from hub_agents.actors import Actor
from hub_agents.audit import SYSTEM, audit_record
from hub_agents.models import AuditEntry
from hub_core.errors import HubError, invalid_argument, permission_denied
from hub_core.events import EventType, HubEvent, publish, sealed_atomic
from hub_core.formats import duration, timestamp
from hub_core.metrics import WEBHOOK_DELIVERIES, count_on_commit
from hub_events.models import OPERATORS, Event
from hub_events.services import events_seal_leftovers
from hub_webhooks.addresses import webhook_target
from hub_webhooks.models import Delivery, Subscription
from hub_webhooks.selectors import webhook_administered, webhook_not_found
from hub_webhooks.send import Answer, body_for, post_event, webhook_client
from hub_webhooks.signing import secret_new

TEST_EVENT = "webhook_test"
SUBSCRIPTIONS_MAX = 20  # per network: each is a reader of the whole feed


@dataclass(frozen=True)
class Policy:
    """How the engine paces itself. The defaults are production's; tests shorten them."""

    lease_seconds: float = 60.0  # must outlast the longest POST (about 3 x timeout: connect, send, answer)
    timeout_seconds: float = 10.0
    backoff_base_seconds: float = 5.0  # the first retry's delay; doubling, with jitter
    backoff_cap_seconds: float = 3600.0
    give_up_after_seconds: float = 86400.0  # of unbroken failure, then the subscription is disabled
    batch: int = 100  # events read per lease; then the subscription goes back in the queue

    def backoff(self, attempts: int) -> timedelta:
        """Exponential, capped, with "equal jitter": half the delay fixed, half random, so
        receivers coming back from an outage are not hit by every subscription at once."""
        delay = min(self.backoff_cap_seconds, self.backoff_base_seconds * 2 ** min(attempts - 1, 40))
        return timedelta(seconds=delay / 2 + random.uniform(0, delay / 2))


def deliverer_name() -> str:
    """A deliverer's name in the lease: which host and process holds a subscription."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


# ---- Subscriptions ---------------------------------------------------------------------------------


def _administered(actor: Actor, network_id: str | None) -> str:
    """The network a change goes to (the caller's only one, or the one it names), which it must administer."""
    network_id = actor.writable_network(network_id)
    if not actor.can_administer(network_id):
        raise permission_denied(f"Only the owners and admins of network {network_id} manage its webhooks.")
    return network_id


def _clean_types(event_types: list[str]) -> list[str]:
    known = {str(kind) for kind in EventType}
    unknown = sorted(set(event_types) - known)
    if unknown:
        raise invalid_argument("event_types", f"names unknown event types {unknown}; choose from {sorted(known)}")
    return sorted(set(event_types))


@transaction.atomic
def webhook_create(
    *, actor: Actor, network_id: str | None, url: str, event_types: list[str] | None = None, alias: str | None = ""
) -> tuple[Subscription, str]:
    """A new subscription, sent what the network's feed gets from now on. Returns it and its
    secret, which is shown this once."""
    network_id = _administered(actor, network_id)
    url = url.strip()
    webhook_target(url)  # refuses a scheme or an address webhooks may not use
    event_types = _clean_types(event_types or [])
    alias = alias or ""
    if Subscription.objects.filter(network_id=network_id).count() >= SUBSCRIPTIONS_MAX:
        raise HubError(
            "webhook_limit", f"A network has at most {SUBSCRIPTIONS_MAX} webhooks; delete one first.", status=409
        )
    secret = secret_new()
    # From the feed's end: a new receiver is not flooded with a week of history. The position is
    # read inside this transaction, so no event committed after it is missed.
    position = (
        Event.objects.filter(network_id=network_id, audience=OPERATORS, seq__isnull=False).order_by("-seq").first()
    )
    subscription = Subscription.objects.create(
        network_id=network_id,
        url=url,
        event_types=event_types,
        alias=alias.strip(),
        secret=secret,
        cursor=position.seq if position else 0,
        cursor_at=position.created_at if position else timezone.now(),
        created_by=actor.label,
    )
    audit_record(
        network_id=network_id,
        action=AuditEntry.Action.WEBHOOK_CREATED,
        actor=actor.label,
        target=f"webhook {subscription.pk} {url}",
        event_types=event_types or "all",
        alias=subscription.alias,
    )
    return subscription, secret


def webhook_set_active(*, actor: Actor, subscription_id: int, active: bool) -> Subscription:
    """Enable (resume from the cursor, retry state cleared) or disable a subscription."""
    subscription = webhook_administered(actor=actor, subscription_id=subscription_id)
    return webhook_switch(subscription_id=subscription.pk, active=active, by=actor.label)


@transaction.atomic
def webhook_switch(*, subscription_id: int, active: bool, by: str) -> Subscription:
    """webhook_set_active for a caller already allowed (the admin, whose permissions are Django's)."""
    locked = Subscription.objects.select_for_update().filter(pk=subscription_id).first()
    if locked is None:  # deleted since it was looked up
        raise webhook_not_found(subscription_id, "any more")
    wanted = Subscription.State.ACTIVE if active else Subscription.State.DISABLED
    if locked.state == wanted:
        return locked
    if active:
        webhook_target(locked.url)  # the address may have become one webhooks may not reach
    locked.state = wanted
    locked.disabled_reason = "" if active else f"Disabled by {by}."
    locked.attempts, locked.next_attempt_at, locked.failing_since = 0, None, None
    locked.save(update_fields=["state", "disabled_reason", "attempts", "next_attempt_at", "failing_since"])
    audit_record(
        network_id=locked.network_id,
        action=AuditEntry.Action.WEBHOOK_CHANGED,
        actor=by,
        target=f"webhook {locked.pk} {locked.url}",
        change="enabled" if active else "disabled",
        cursor=locked.cursor,
    )
    return locked


def webhook_delete(*, actor: Actor, subscription_id: int) -> None:
    subscription = webhook_administered(actor=actor, subscription_id=subscription_id)
    webhook_remove(subscription_id=subscription.pk, by=actor.label)


@transaction.atomic
def webhook_remove(*, subscription_id: int, by: str) -> None:
    """webhook_delete for a caller already allowed (the admin)."""
    subscription = Subscription.objects.select_for_update().filter(pk=subscription_id).first()
    if subscription is None:
        return
    audit_record(
        network_id=subscription.network_id,
        action=AuditEntry.Action.WEBHOOK_DELETED,
        actor=by,
        target=f"webhook {subscription.pk} {subscription.url}",
    )
    subscription.delete()  # its deliveries with it; a deliverer holding it finds it gone and stops


def webhook_send_test(*, actor: Actor, subscription_id: int, policy: Policy | None = None) -> Delivery:
    """POST a `webhook_test` event to this subscription only, signed like every event, and record
    the attempt. Touches neither the cursor nor the retry state. Runs outside any transaction: the
    POST may take the whole timeout."""
    subscription = webhook_administered(actor=actor, subscription_id=subscription_id)
    policy = policy or Policy()
    now = timezone.now()
    frame = {
        "id": None,
        "type": TEST_EVENT,
        "network_id": subscription.network_id,
        "audience": None,
        "to": [],
        "payload": {"subscription_id": subscription.pk, "sent_by": actor.label, "note": "A test event from CommHub."},
        "created_at": timestamp(now),
    }
    with webhook_client() as client:
        answer = post_event(
            client=client,
            url=subscription.url,
            secret=subscription.secret,
            event_id=f"{subscription.network_id}:test-{uuid.uuid4().hex}",
            event_type=TEST_EVENT,
            body=body_for(frame),
            timeout=policy.timeout_seconds,
        )
    return _record(subscription, seq=None, event_type=TEST_EVENT, attempt=1, answer=answer)


def _record(subscription: Subscription, *, seq: int | None, event_type: str, attempt: int, answer: Answer) -> Delivery:
    if answer.refused:
        outcome = Delivery.Outcome.REFUSED
    else:
        outcome = Delivery.Outcome.DELIVERED if answer.ok else Delivery.Outcome.FAILED
    count_on_commit(WEBHOOK_DELIVERIES, network=subscription.network_id, outcome=outcome)
    return Delivery.objects.create(
        subscription=subscription,
        event_seq=seq,
        event_type=event_type,
        attempt=attempt,
        outcome=outcome,
        status_code=answer.status_code,
        error=answer.error,
        response_excerpt=answer.excerpt,
        duration_ms=answer.duration_ms,
    )


# ---- The delivery engine ------------------------------------------------------------------------


def webhooks_deliver(*, owner: str, client: httpx.Client, policy: Policy | None = None, limit: int = 50) -> int:
    """One pass: every subscription that is due and not leased elsewhere gets a batch of its events
    delivered. Returns how many events were delivered (2xx). Any number of deliverers may run it."""
    policy = policy or Policy()
    delivered = 0
    for subscription_id in webhooks_due(limit=limit):
        delivered += webhook_deliver_batch(subscription_id=subscription_id, owner=owner, client=client, policy=policy)
    return delivered


def webhooks_due(*, limit: int = 50) -> list[int]:
    """Active subscriptions whose retry time has come, leased by nobody (or by a deliverer whose
    lease ran out), with events in their network's operators' feed after their cursor."""
    now = timezone.now()
    for network_id in set(
        Subscription.objects.filter(state=Subscription.State.ACTIVE).values_list("network_id", flat=True)
    ):
        events_seal_leftovers(network_id=network_id)  # what a dead writer committed unsealed
    pending = Event.objects.filter(network_id=OuterRef("network_id"), audience=OPERATORS, seq__gt=OuterRef("cursor"))
    due = (
        Subscription.objects.filter(state=Subscription.State.ACTIVE)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=Now()))
        .filter(Exists(pending))
        .order_by("next_attempt_at", "pk")
    )
    return list(due.values_list("pk", flat=True)[:limit])


# Leases are given and checked on the database's clock, the one clock every deliverer shares:
# deliverers on hosts whose clocks disagree still never hold one subscription at once.


def _lease_end(policy: Policy) -> CombinedExpression:
    return Now() + timedelta(seconds=policy.lease_seconds)


def _claim(subscription_id: int, owner: str, policy: Policy) -> bool:
    """Take the subscription's lease if it is free (or ran out), still active and due: a
    compare-and-swap, so of two deliverers (or two threads of one) exactly one wins."""
    return (
        Subscription.objects.filter(pk=subscription_id, state=Subscription.State.ACTIVE)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=timezone.now()))
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=Now()))
        .update(lease_owner=owner, lease_until=_lease_end(policy))
        == 1
    )


def _renew(subscription_id: int, owner: str, policy: Policy) -> bool:
    """Extend our lease before a POST; False if it is no longer ours (it ran out and another
    deliverer took it, or the subscription was disabled or deleted): then we stop."""
    return (
        Subscription.objects.filter(pk=subscription_id, lease_owner=owner, state=Subscription.State.ACTIVE).update(
            lease_until=_lease_end(policy)
        )
        == 1
    )


def _release(subscription_id: int, owner: str) -> None:
    Subscription.objects.filter(pk=subscription_id, lease_owner=owner).update(lease_owner="", lease_until=None)


def webhook_deliver_batch(*, subscription_id: int, owner: str, client: httpx.Client, policy: Policy) -> int:
    """Deliver up to a batch of one subscription's events in order, stopping at the first failure
    (head of line: the next event waits until this one got a 2xx). Returns the 2xx count."""
    if not _claim(subscription_id, owner, policy):
        return 0
    try:
        return _deliver_leased(subscription_id, owner, client, policy)
    finally:
        _release(subscription_id, owner)


def _deliver_leased(subscription_id: int, owner: str, client: httpx.Client, policy: Policy) -> int:
    subscription = Subscription.objects.filter(pk=subscription_id).first()
    if subscription is None:
        return 0
    _skip_pruned(subscription)
    events = list(
        Event.objects.filter(network_id=subscription.network_id, audience=OPERATORS, seq__gt=subscription.cursor)
        .order_by("seq")
        .only("seq", "type", "to", "payload", "network_id", "audience", "created_at")[: policy.batch]
    )
    delivered = 0
    passed: Event | None = None  # the last event passed over (not wanted) since the last settle
    for event in events:
        if not subscription.wants(type=event.type, to=event.to):
            passed = event
            continue
        if not _renew(subscription_id, owner, policy):
            return delivered
        answer = post_event(
            client=client,
            url=subscription.url,
            secret=subscription.secret,
            event_id=f"{subscription.network_id}:{event.seq}",
            event_type=event.type,
            body=body_for(event.as_frame()),
            timeout=policy.timeout_seconds,
        )
        settled = _settle(subscription_id, owner, event=event, passed=passed, answer=answer, policy=policy)
        passed = None
        if settled is None or not answer.ok:
            return delivered
        subscription = settled
        delivered += 1
    if passed is not None:
        _settle_passed(subscription_id, passed)
    return delivered


def _move_cursor(subscription: Subscription, event: Event | None) -> None:
    """Forward only: a deliverer whose lease ran out may settle after the one that took over."""
    if event is not None and event.seq > subscription.cursor:
        subscription.cursor, subscription.cursor_at = event.seq, event.created_at


def _settle_passed(subscription_id: int, passed: Event) -> None:
    with transaction.atomic():
        locked = Subscription.objects.select_for_update().filter(pk=subscription_id).first()
        if locked is not None:
            _move_cursor(locked, passed)
            locked.save(update_fields=["cursor", "cursor_at"])


def _settle(
    subscription_id: int, owner: str, *, event: Event, passed: Event | None, answer: Answer, policy: Policy
) -> Subscription | None:
    """Record the attempt and its consequence under the row lock, after the POST: the cursor past
    the event (2xx), else the next retry, or disabling after failing for too long. Returns the
    subscription as saved (None if it was deleted meanwhile)."""
    with sealed_atomic():
        locked = Subscription.objects.select_for_update().filter(pk=subscription_id).first()
        if locked is None:
            return None
        now = timezone.now()
        _record(locked, seq=event.seq, event_type=event.type, attempt=locked.attempts + 1, answer=answer)
        _move_cursor(locked, passed)
        fields = ["cursor", "cursor_at", "attempts", "next_attempt_at", "failing_since"]
        if answer.ok:
            _move_cursor(locked, event)
            locked.attempts, locked.next_attempt_at, locked.failing_since = 0, None, None
            locked.last_delivered_at = now
            fields.append("last_delivered_at")
        elif locked.lease_owner == owner:  # a deliverer that lost its lease leaves the retry state alone
            locked.attempts += 1
            locked.failing_since = locked.failing_since or now
            if now - locked.failing_since >= timedelta(seconds=policy.give_up_after_seconds):
                fields += _disable_failing(locked, answer, now, seq=event.seq, policy=policy)
            else:
                locked.next_attempt_at = now + policy.backoff(locked.attempts)
        locked.save(update_fields=fields)
        return locked


def _disable_failing(
    subscription: Subscription, answer: Answer, now: datetime, *, seq: int, policy: Policy
) -> list[str]:
    """Switch off a subscription that failed without a break for the give-up time, and tell the
    network's operators: an audit row, an event on their feed, a note among its deliveries."""
    last = f"HTTP {answer.status_code}" if answer.status_code is not None else answer.error
    since = timestamp(subscription.failing_since)
    retried = duration(int(policy.give_up_after_seconds), one="one")
    reason = f"Failing since {since} (last: {last}); disabled after {retried} of retries. Enable it to resume."
    subscription.state = Subscription.State.DISABLED
    subscription.disabled_reason = reason[:500]
    subscription.next_attempt_at = None
    Delivery.objects.create(
        subscription=subscription,
        event_seq=seq,
        event_type="",
        attempt=subscription.attempts,
        outcome=Delivery.Outcome.DISABLED,
        error=reason[:500],
        created_at=now,
    )
    audit_record(
        network_id=subscription.network_id,
        action=AuditEntry.Action.WEBHOOK_DISABLED,
        actor=SYSTEM,
        target=f"webhook {subscription.pk} {subscription.url}",
        failing_since=since,
        attempts=subscription.attempts,
        last=last[:200],
    )
    publish(
        HubEvent(
            type=EventType.WEBHOOK_DISABLED,
            network_id=subscription.network_id,
            audience=(),
            payload={
                "subscription_id": subscription.pk,
                "url": subscription.url,
                "reason": reason,
                "failing_since": since,
            },
        )
    )
    return ["state", "disabled_reason"]


def _skip_pruned(subscription: Subscription) -> None:
    """If the log pruned events after the cursor before they were sent (a subscription disabled,
    or failing, for longer than the retention), note it among the deliveries and go on from what is
    left. Cheap unless the cursor is older than the retention: only then can anything be missing."""
    horizon = timezone.now() - timedelta(seconds=settings.COMMHUB_EVENT_RETENTION_SECONDS) + timedelta(hours=1)
    if subscription.cursor_at >= horizon:
        return
    network = subscription.network_id
    if Event.objects.filter(network_id=network, seq=subscription.cursor + 1).exists():
        return  # positions have no gaps (ADR 0002): the next one is there, nothing was pruned
    first_left = Event.objects.filter(network_id=network, seq__gt=subscription.cursor).aggregate(first=Min("seq"))
    if first_left["first"] is None:
        return  # nothing after the cursor at all: no event was written since
    last_gone = first_left["first"] - 1
    left_at = Event.objects.filter(network_id=network, seq=first_left["first"]).values_list("created_at", flat=True)[0]
    with transaction.atomic():
        locked = Subscription.objects.select_for_update().get(pk=subscription.pk)
        if locked.cursor >= last_gone:
            return
        Delivery.objects.create(
            subscription=locked,
            event_seq=last_gone,
            event_type="",
            attempt=0,
            outcome=Delivery.Outcome.SKIPPED,
            error=(
                f"Positions {locked.cursor + 1} to {last_gone} were pruned from the event log (older than its "
                "retention) before this webhook reached them: any event of its among them was not sent (the "
                "network's other feeds share the positions, so there may have been none); going on from the "
                "first one left."
            ),
        )
        locked.cursor, locked.cursor_at = last_gone, left_at
        locked.save(update_fields=["cursor", "cursor_at"])
    subscription.cursor, subscription.cursor_at = locked.cursor, locked.cursor_at


def deliveries_prune() -> int:
    """Delete delivery records older than the event log's retention (the events they were for are gone)."""
    cutoff = timezone.now() - timedelta(seconds=settings.COMMHUB_EVENT_RETENTION_SECONDS)
    deleted, _ = Delivery.objects.filter(created_at__lt=cutoff).delete()
    return deleted
