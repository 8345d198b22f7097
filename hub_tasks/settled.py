"""Reads that show tasks settle first: the one entry the tools and the dashboard share.

A task past its deadline (its TTL, its lease) is moved on by the first read that would show it
(hub_tasks.lifecycle.tasks_expire_due: a write, so its sender hears of it), so nobody reads a stale
"delivered" and no sweep is needed for correctness. Selectors never write: a read that shows tasks
is `settled(selector)` in its tool spec, and a dashboard page calls `tasks_settled` before it reads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from hub_agents.actors import Actor
from hub_tasks.lifecycle import tasks_expire_due

Read = TypeVar("Read", bound=Callable[..., Any])


def tasks_settled(*, actor: Actor, network_id: str | None = None) -> None:
    """Settle the deadlines of the tasks `actor` may see (in `network_id`, or in all its networks)."""
    tasks_expire_due(network_ids=actor.readable_networks(network_id))


def settled(read: Read) -> Read:
    """`read` (a selector or service taking actor=), settling what its caller may see first."""

    @functools.wraps(read)
    def settled_read(*, actor: Actor, **arguments: Any) -> Any:
        tasks_settled(actor=actor)
        return read(actor=actor, **arguments)

    return settled_read  # type: ignore[return-value]
