"""Per-caller write limits and failed-login counts: one noisy or hostile caller must not slow the
hub for the rest, nor guess a password by trying.

The counts live in the `limits` library's storage: Redis when REDIS_URL is set (one count across
every process), else process memory. A storage that fails lets the write through: a broken Redis
may cost the limit for a while, never an agent's write.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from functools import cache

from django.conf import settings
from limits import RateLimitItem, parse
from limits.storage import Storage, storage_from_string
from limits.strategies import MovingWindowRateLimiter, SlidingWindowCounterRateLimiter

from commhub.errors import HubError
from hub_agents.actors import Actor

logger = logging.getLogger(__name__)


@cache
def _storage() -> Storage:
    return storage_from_string(settings.COMMHUB_RATE_LIMIT_STORAGE)


@cache
def _limit() -> tuple[RateLimitItem, SlidingWindowCounterRateLimiter] | None:
    if settings.COMMHUB_WRITE_RATE_LIMIT == "off":
        return None
    return parse(settings.COMMHUB_WRITE_RATE_LIMIT), SlidingWindowCounterRateLimiter(_storage())


@cache
def _login_limits() -> tuple[MovingWindowRateLimiter, dict[str, RateLimitItem]]:
    # A moving window, not the writes' sliding counter: a lockout ends at an exact moment (the
    # oldest failure ageing out) that the refusal can name, and no window edge doubles the budget.
    configured = {
        "username": settings.COMMHUB_LOGIN_FAILURE_LIMIT,
        "address": settings.COMMHUB_LOGIN_ADDRESS_FAILURE_LIMIT,
    }
    items = {scope: parse(limit) for scope, limit in configured.items() if limit != "off"}
    return MovingWindowRateLimiter(_storage()), items


def reset() -> None:
    """Forget the configured limits and their counts (settings changed: tests, a reload)."""
    _limit.cache_clear()
    _login_limits.cache_clear()
    _storage.cache_clear()


def write_rate_check(actor: Actor) -> None:
    """Count one write for the actor; HubError("rate_limited", retry_after=N) past the limit."""
    identity = (settings.COMMHUB_RATE_LIMIT_PREFIX, "writes", actor.key)
    try:
        configured = _limit()
        if configured is None:
            return
        item, limiter = configured
        if limiter.hit(item, *identity):
            return
        reset_at = limiter.get_window_stats(item, *identity).reset_time
    except Exception:
        logger.warning("rate limit storage unavailable; letting the write through", exc_info=True)
        return
    retry_after = max(1, math.ceil(reset_at - time.time()))
    raise HubError(
        "rate_limited",
        f"Too many writes: a token may make {item.amount} per {item.get_expiry()} s. Try again in {retry_after} s.",
        status=429,
        retry_after=retry_after,
    )


# --- failed logins ---------------------------------------------------------------------------------
# `keys` name who is counted: {"username": <digest>, "address": "192.0.2.7"}; a scope whose limit is
# "off", or whose key is unknown (no request), is not counted.


@dataclass(frozen=True)
class LoginLock:
    scope: str  # "username" or "address": which count is full
    retry_after: int  # seconds until one more attempt is allowed
    limit: RateLimitItem


def _login_identity(scope: str, key: str) -> tuple[str, ...]:
    return (settings.COMMHUB_RATE_LIMIT_PREFIX, "login-failures", scope, key)


def login_lock(keys: dict[str, str]) -> LoginLock | None:
    """The lock in force for these keys (the longest wait if both are full), else None."""
    try:
        limiter, items = _login_limits()
        locks = []
        for scope, item in items.items():
            if keys.get(scope) and not limiter.test(item, *_login_identity(scope, keys[scope])):
                reset_at = limiter.get_window_stats(item, *_login_identity(scope, keys[scope])).reset_time
                locks.append(LoginLock(scope, max(1, math.ceil(reset_at - time.time())), item))
    except Exception:
        # As with writes: a broken store costs the limit for a while, never an operator's login.
        logger.warning("rate limit storage unavailable; not checking failed logins", exc_info=True)
        return None
    return max(locks, key=lambda lock: lock.retry_after, default=None)


def login_failure_count(keys: dict[str, str]) -> list[LoginLock]:
    """Count one failed login against each key; the locks this failure started (each once)."""
    started = []
    try:
        limiter, items = _login_limits()
        for scope, item in items.items():
            if not keys.get(scope):
                continue
            identity = _login_identity(scope, keys[scope])
            # Only the failure that fills the window starts a lock (two at the same moment may both
            # report it); later attempts are refused by the backend before they are counted.
            if limiter.hit(item, *identity) and not limiter.test(item, *identity):
                reset_at = limiter.get_window_stats(item, *identity).reset_time
                started.append(LoginLock(scope, max(1, math.ceil(reset_at - time.time())), item))
    except Exception:
        logger.warning("rate limit storage unavailable; a failed login went uncounted", exc_info=True)
    return started
