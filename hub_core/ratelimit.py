"""The store of every per-caller count, and failed-login counts: no one may guess a password by trying.

The counts live in the `limits` library's storage: Redis when REDIS_URL is set (one count across
every process), else process memory. The write limit built on this store is hub_tools.ratelimit.
A storage that fails lets the attempt through: a broken Redis may cost the limit for a while, never
an operator's login.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from django.conf import settings
from limits import RateLimitItem, parse
from limits.storage import Storage, storage_from_string
from limits.strategies import MovingWindowRateLimiter

from hub_core.metrics import RATE_LIMIT_REFUSALS

logger = logging.getLogger(__name__)


@cache
def storage() -> Storage:
    """The one store of every count (writes in hub_tools.ratelimit, failed logins here)."""
    uri = settings.COMMHUB_RATE_LIMIT_STORAGE
    if uri.startswith("redis"):
        # `limits` reads sys.modules["redis"].__version__ without importing: while another thread
        # (the first writes of a new process arrive together) is still importing redis, it finds
        # no version and refuses the store. An import statement waits for that import to finish.
        import redis  # noqa: F401
    return storage_from_string(uri)


# Caches built from the settings by the layers above (the write limit), cleared with this module's own.
_on_reset: list[Callable[[], None]] = []


def on_reset(clear: Callable[[], None]) -> None:
    """Register a cache to forget when the limits are rebuilt (`reset()`)."""
    _on_reset.append(clear)


@cache
def _login_limits() -> tuple[MovingWindowRateLimiter, dict[str, RateLimitItem]]:
    # A moving window, not the writes' sliding counter: a lockout ends at an exact moment (the
    # oldest failure ageing out) that the refusal can name, and no window edge doubles the budget.
    configured = {
        "username": settings.COMMHUB_LOGIN_FAILURE_LIMIT,
        "address": settings.COMMHUB_LOGIN_ADDRESS_FAILURE_LIMIT,
    }
    items = {scope: parse(limit) for scope, limit in configured.items() if limit != "off"}
    return MovingWindowRateLimiter(storage()), items


def reset() -> None:
    """Forget the configured limits and their counts (settings changed: tests, a reload)."""
    for clear in _on_reset:
        clear()
    _login_limits.cache_clear()
    storage.cache_clear()


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
    """The lock in force for these keys (the longest wait if both are full), else None. The caller
    refuses the login on a lock: it counts as a refusal (commhub_rate_limit_refusals_total)."""
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
    lock = max(locks, key=lambda lock: lock.retry_after, default=None)
    if lock is not None:
        RATE_LIMIT_REFUSALS.labels(limit="login").inc()
    return lock


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
