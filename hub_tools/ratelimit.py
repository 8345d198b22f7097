"""Per-caller write limits: one noisy or hostile caller must not slow the hub for the rest.

The counts live in hub_core.ratelimit's store (Redis when REDIS_URL is set: one count across every
process, else process memory). A storage that fails lets the write through: a broken Redis may cost
the limit for a while, never an agent's write.
"""

from __future__ import annotations

import logging
import math
import time
from functools import cache

from django.conf import settings
from limits import RateLimitItem, parse
from limits.strategies import SlidingWindowCounterRateLimiter

from hub_agents.actors import Actor
from hub_core import ratelimit
from hub_core.errors import HubError
from hub_core.metrics import RATE_LIMIT_REFUSALS

logger = logging.getLogger(__name__)


@cache
def _limit() -> tuple[RateLimitItem, SlidingWindowCounterRateLimiter] | None:
    if settings.COMMHUB_WRITE_RATE_LIMIT == "off":
        return None
    return parse(settings.COMMHUB_WRITE_RATE_LIMIT), SlidingWindowCounterRateLimiter(ratelimit.storage())


ratelimit.on_reset(_limit.cache_clear)


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
    RATE_LIMIT_REFUSALS.labels(limit="write").inc()
    raise HubError(
        "rate_limited",
        f"Too many writes: a token may make {item.amount} per {item.get_expiry()} s. Try again in {retry_after} s.",
        status=429,
        retry_after=retry_after,
    )
