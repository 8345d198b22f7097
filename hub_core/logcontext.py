"""What every log line of a request says about it: its id, its caller and the network it acts in.

The ASGI entry (commhub.asgi, through commhub.logs) opens one context per HTTP request or
websocket connection; where a caller becomes an Actor (hub_agents), its label and network are
filled in; the JSON log formatter (commhub.logs) reads them for each line.

The context variable holds one mutable object, not the values themselves: a value set on a pool
thread (sync_to_async runs the call in a copy of the context) or in a task the request started
is then seen by every later line of the same request, Django's and the server's access line
included. Outside a request (a management command, a test calling a service) there is no context
and setting the caller does nothing.
"""

from __future__ import annotations

from collections.abc import Collection
from contextvars import ContextVar, Token
from dataclasses import dataclass


@dataclass
class LogContext:
    request_id: str | None  # None once the request is over
    actor: str | None = None  # an Actor's label ("ntok_AbCd1234 (ci-runner)", "user:alice"), never a token
    network: str | None = None


_current: ContextVar[LogContext | None] = ContextVar("commhub_log_context", default=None)


def current() -> LogContext | None:
    return _current.get()


def begin(request_id: str) -> Token[LogContext | None]:
    """Opens the context of one request or connection; `end` closes it."""
    return _current.set(LogContext(request_id=request_id))


def end(token: Token[LogContext | None]) -> None:
    """Closes the context. It is emptied too: a callback the request scheduled on the loop keeps a
    copy of the context, and what the server logs from there later is no longer about this request."""
    context = _current.get()
    _current.reset(token)
    if context is not None:
        context.request_id = context.actor = context.network = None


def set_caller(label: str, networks: Collection[str]) -> None:
    """The authenticated caller; its network is known when it has exactly one."""
    context = _current.get()
    if context is not None:
        context.actor = label
        context.network = next(iter(networks)) if len(networks) == 1 else None


def set_network(network_id: str) -> None:
    """The network a call acts in, once it is chosen (a caller of several networks named it)."""
    context = _current.get()
    if context is not None:
        context.network = network_id
