"""Token → actor (and a network's default lease), remembered per process; a change of access
reaches every process within a second.

`token_authenticate` asks here before the database. A remembered actor is used only while the
*access generation* the processes share is the one it was read under. Every change that can alter
what a token may do (a token revoked or deleted; a membership added, changed or removed; a user
changed, deactivated or deleted; a network changed or deleted) calls `access_changed()`: the process that made
it forgets its actors at once, and after commit it sets a new generation, which every other process
reads at most every CHECK_SECONDS, so it forgets its own within that. Model signals catch the
changes made with `save()` and `delete()` wherever they come from (services, the admin, a shell,
cascades); a `QuerySet.update()` sends none, so code that changes access with one calls
`access_changed()` itself (as `token_revoke` does).

Where the generation lives:
- on SQLite, in the database file's own header (`PRAGMA user_version`, which Django never uses):
  every process of an SQLite hub opens that file, so they all see it, and no table is needed;
- else in Redis (REDIS_URL), one key;
- else (PostgreSQL without Redis) nowhere another process could see it, so nothing is remembered
  and every request reads its token as before.
A generation that cannot be read (Redis down) turns the cache off until it can be read again;
COMMHUB_ACTOR_CACHE_SECONDS bounds how long an actor is reused at all, should a new generation
fail to be written (the backstop), and "0" turns the cache off.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, Protocol
from weakref import WeakKeyDictionary

from django.conf import settings
from django.db import connection, transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from hub_agents.actors import Actor
from hub_agents.models import ApiToken, Membership, Network

logger = logging.getLogger(__name__)

# How often a process reads the shared generation, at most: a change reaches every process within
# this (plus one read), well inside the second the hub promises; in between, requests read nothing.
CHECK_SECONDS = 0.25
# Only tokens that authenticated are remembered (an unknown token is never stored), so this bounds a
# process's memory only against a very large fleet; past it the oldest entry goes.
MAX_ENTRIES = 10_000
REDIS_KEY = "commhub:access-generation"


@dataclass
class Entry:
    actor: Actor
    token_id: int
    last_used_at: datetime | None  # as last recorded, so a hit knows when to record use again
    epoch: int
    fetched_at: float  # time.monotonic()


class _Generation(Protocol):
    def read(self) -> object: ...

    def renew(self) -> object: ...


class _SqliteHeader:
    """The generation in the SQLite file's header: read and written on the thread's own connection."""

    def read(self) -> object:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA user_version")
            return cursor.fetchone()[0]

    def renew(self) -> object:
        # A random value, not a count: no read-modify-write between two processes can lose a change
        # or bring back a value a reader already saw. (The header holds a signed 32-bit integer.)
        value = secrets.randbelow(2**31 - 1) + 1
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA user_version = {value:d}")
        return value


class _RedisKey:
    def __init__(self, url: str) -> None:
        import redis  # only where REDIS_URL is set

        # Short timeouts: a Redis that does not answer turns the cache off, it must not hold requests.
        self.client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)

    def read(self) -> object:
        value = self.client.get(REDIS_KEY)
        if value is None:
            # A Redis that lost the key (restarted, flushed) gets a fresh value: "missing" must never
            # read as "unchanged" to a process that saw it missing before a change.
            self.client.set(REDIS_KEY, secrets.token_hex(8), nx=True)
            value = self.client.get(REDIS_KEY)
        return value

    def renew(self) -> object:
        value = secrets.token_hex(8).encode()
        self.client.set(REDIS_KEY, value)
        return value


@cache
def _generation_for(vendor: str, redis_url: str) -> _Generation | None:
    if vendor == "sqlite":
        return _SqliteHeader()
    if redis_url:
        return _RedisKey(redis_url)
    return None


def _generation() -> _Generation | None:
    return _generation_for(connection.vendor, settings.REDIS_URL)


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: dict[str, Entry] = {}
        # Bumped whenever this process forgets: an entry counts only under the epoch it was read in,
        # so a read that raced a change (and would store what was true before it) is never used.
        self.epoch = 0
        # (network id, what) -> a network setting many calls read (its default lease, its approval
        # rules), kept and forgotten with the actors: a change to one is a change of access.
        self.memos: dict[tuple[str, str], Any] = {}
        self.seen: object = None  # the shared generation as last read
        self.usable = False  # whether it could be read last time
        self.checked_at = float("-inf")

    def forget(self) -> None:
        with self.lock:
            self.epoch += 1
            self.entries.clear()
            self.memos.clear()

    def observe(self, generation: object) -> None:
        with self.lock:
            if generation is not None and self.usable and generation == self.seen:
                return
            if generation is None and self.usable:
                logger.warning("the access generation cannot be read; tokens are read on every request until it can")
            self.seen, self.usable = generation, generation is not None
            self.epoch += 1
            self.entries.clear()
            self.memos.clear()


_state = _State()


def current_epoch() -> int | None:
    """The epoch to read a token under (take it before reading the database), or None when nothing
    may be remembered: the cache is off, or no generation is shared or readable."""
    if not settings.COMMHUB_ACTOR_CACHE_SECONDS:
        return None
    now = time.monotonic()
    # "Not within the last CHECK_SECONDS", not "past the next check": a clock that went back (a test
    # freezing time) must not stop the checks.
    if not 0 <= now - _state.checked_at < CHECK_SECONDS:
        _state.checked_at = now  # first: the other threads keep going instead of all reading at once
        _state.observe(_read_generation())
    return _state.epoch if _state.usable else None


def known_epoch() -> int | None:
    """current_epoch() when it needs no read of the shared generation (read within CHECK_SECONDS);
    None when nothing may be remembered or the generation is due a read (current_epoch reads it)."""
    if not settings.COMMHUB_ACTOR_CACHE_SECONDS or not 0 <= time.monotonic() - _state.checked_at < CHECK_SECONDS:
        return None
    return _state.epoch if _state.usable else None


def _read_generation() -> object:
    store = _generation()
    if store is None:
        return None
    try:
        return store.read()
    except Exception:
        logger.debug("could not read the access generation", exc_info=True)
        return None


def get(digest: str, epoch: int | None) -> Entry | None:
    if epoch is None:
        return None
    entry = _state.entries.get(digest)
    if entry is None or entry.epoch != _state.epoch:
        return None
    if not 0 <= time.monotonic() - entry.fetched_at < settings.COMMHUB_ACTOR_CACHE_SECONDS:
        return None
    return entry


def put(digest: str, epoch: int | None, *, actor: Actor, token_id: int, last_used_at: datetime | None) -> None:
    if epoch is None:
        return
    entry = Entry(actor, token_id, last_used_at, epoch, time.monotonic())
    with _state.lock:
        if epoch != _state.epoch:
            return  # the process forgot while this was read: it may be from before a change
        if digest not in _state.entries and len(_state.entries) >= MAX_ENTRIES:
            del _state.entries[next(iter(_state.entries))]
        _state.entries[digest] = entry


def network_memo(network_id: str, what: str, load: Callable[[], Any]) -> Any:
    """A network setting many calls read (`what` names it), from memory while the access generation
    holds, else `load()`ed from the database. Whoever changes such a setting calls access_changed()
    (a saved Network does it by itself)."""
    epoch = current_epoch()
    key = (network_id, what)
    if epoch is not None and epoch == _state.epoch and key in _state.memos:
        return _state.memos[key]
    value = load()
    if epoch is not None:
        with _state.lock:
            if epoch == _state.epoch:  # else the process forgot while this was read
                _state.memos[key] = value
    return value


def memo_known(network_id: str, what: str) -> bool:
    """Whether network_memo would answer from memory, without reading anything."""
    epoch = known_epoch()
    return epoch is not None and epoch == _state.epoch and (network_id, what) in _state.memos


def network_default_lease(network_id: str) -> int | None:
    """The network's default_lease_seconds (keeps a query off every send_task)."""
    return network_memo(
        network_id,
        "default_lease",
        lambda: Network.objects.filter(pk=network_id).values_list("default_lease_seconds", flat=True).first(),
    )


# --- changes of access ---------------------------------------------------------------------------

# The renewal registered for the running transaction, per connection (connections are per thread):
# a transaction that changes many rows (a network deleted with its members and tokens) renews once.
# Django drops the callback if the transaction rolls back, and the weak reference dies with it.
_registered: WeakKeyDictionary[Any, Callable[[], object | None]] = WeakKeyDictionary()


def access_changed() -> None:
    """Something a token may do changed: forget here now, and everywhere once it is committed."""
    _state.forget()  # now: this process must not answer from what this transaction is changing
    current = transaction.get_connection()
    registration = _registered.get(current)
    if registration is not None and registration() is not None:
        return

    def renew_after_commit() -> None:
        store = _generation()
        try:
            generation = store.renew() if store is not None else None
        except Exception:
            # Other processes then keep their actors until they expire (COMMHUB_ACTOR_CACHE_SECONDS).
            logger.warning("could not publish a change of access to the other processes", exc_info=True)
            generation = None
        # Again after commit: a request of this process may have read the rows before the commit.
        _state.observe(generation)

    _registered[current] = weakref.ref(renew_after_commit)
    # Outside a transaction this runs at once; inside, after commit.
    transaction.on_commit(renew_after_commit, robust=True)


@receiver(post_save, sender=ApiToken, dispatch_uid="actor_cache.token_saved")
def _token_saved(sender: Any, created: bool, **kwargs: Any) -> None:
    if not created:  # a new token is nowhere remembered yet
        access_changed()


@receiver(post_save, sender=Network, dispatch_uid="actor_cache.network_saved")
@receiver(post_save, sender=Membership, dispatch_uid="actor_cache.membership_saved")
@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="actor_cache.user_saved")
def _saved(sender: Any, update_fields: frozenset[str] | None = None, **kwargs: Any) -> None:
    if update_fields is not None and update_fields <= {"last_login"}:
        return  # every login saves last_login; it changes nothing a token may do
    access_changed()


@receiver(post_delete, sender=ApiToken, dispatch_uid="actor_cache.token_deleted")
@receiver(post_delete, sender=Membership, dispatch_uid="actor_cache.membership_deleted")
@receiver(post_delete, sender=Network, dispatch_uid="actor_cache.network_deleted")
@receiver(post_delete, sender=settings.AUTH_USER_MODEL, dispatch_uid="actor_cache.user_deleted")
def _deleted(sender: Any, **kwargs: Any) -> None:
    access_changed()
