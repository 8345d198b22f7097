"""The hub's own spans (OpenTelemetry), for the layers below the project package: a tool call, an
event's publication, its delivery. Off unless commhub.tracing switched them on at start-up.

Off, nothing here imports OpenTelemetry and each helper costs one check: `span` and `delivery`
hand back one shared do-nothing context manager, `traceparent` an empty string. On, the trace
context travels in the event (hub_events stores the `traceparent` of the span that published it)
and each delivery of it to an agent's stream is a child of that span, so a tool call, its database
work, its event and the event's delivery to the agent share one trace.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from hub_core.errors import HubError

_off: AbstractContextManager[None] = nullcontext()
_no_trace: AbstractContextManager[str] = nullcontext("")
_tracer: Any = None  # an opentelemetry Tracer while on


def switch_on(tracer_provider: Any = None) -> None:
    """Spans from now on, through this provider (None: the global one, set by commhub.tracing)."""
    global _tracer
    from opentelemetry import trace

    _tracer = trace.get_tracer("commhub", tracer_provider=tracer_provider)


def switch_off() -> None:
    global _tracer
    _tracer = None


def on() -> bool:
    return _tracer is not None


def tool(name: str) -> AbstractContextManager[None]:
    """The span "tool <name>" around one tool call, the current one inside it (its database work,
    the events it publishes are its children). A refusal (HubError) is an outcome, not an error:
    its code is an attribute, and only a server-side refusal (5xx) marks the span failed."""
    if _tracer is None:
        return _off
    return _span(f"tool {name}", {"commhub.tool": name})


@contextmanager
def _span(name: str, attributes: Mapping[str, Any] | None) -> Iterator[None]:
    from opentelemetry.trace import Status, StatusCode

    quietly = {"record_exception": False, "set_status_on_exception": False}  # decided below
    with _tracer.start_as_current_span(name, attributes=attributes, **quietly) as current:
        try:
            yield
        except HubError as refusal:
            current.set_attribute("commhub.error.code", refusal.code)
            if refusal.status >= 500:
                current.set_status(Status(StatusCode.ERROR, refusal.code))
            raise
        except Exception as exc:
            current.record_exception(exc)
            current.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
            raise


def publishing(event_type: str, network_id: str, recipients: int) -> AbstractContextManager[str]:
    """The span "publish <type>" (kind PRODUCER) around publishing an event (its rows are written
    there, or by its sealed block's seal); the block gets the span's W3C `traceparent`, to store
    with the event ("" when off)."""
    if _tracer is None:
        return _no_trace
    attributes = {"commhub.event.type": event_type, "commhub.network_id": network_id, "commhub.recipients": recipients}
    return _producer_span(f"publish {event_type}", attributes)


@contextmanager
def _producer_span(name: str, attributes: Mapping[str, Any] | None) -> Iterator[str]:
    from opentelemetry.trace import SpanKind
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    with _tracer.start_as_current_span(name, kind=SpanKind.PRODUCER, attributes=attributes):
        carrier: dict[str, str] = {}
        # Sampled out or not, stored: a delivery then follows the publisher's sampling decision
        # (the default sampler is parent-based) instead of starting a trace of its own.
        TraceContextTextMapPropagator().inject(carrier)
        yield carrier.get("traceparent", "")


def delivery(event_type: str, event_id: int, traceparent: str, audience: str) -> AbstractContextManager[None]:
    """The span "deliver <type>" (kind CONSUMER) around one delivery of an event published under
    `traceparent` (nothing when it was published untraced) to `audience`: a child of the publishing
    span, so the delivery joins the publisher's trace. Its parent, not a link from the reader's
    request: a stream's request span ends when its response starts (Django's instrumentation),
    long before the events it delivers are published; the reader is named by an attribute.

    The span is never made current: it may be held open across a stream's `yield` (its end is when
    the server took the frame), and a generator may be closed from another context."""
    if _tracer is None or not traceparent:
        return _off
    attributes = {"commhub.event.type": event_type, "commhub.event.id": event_id, "commhub.audience": audience}
    return _delivery(f"deliver {event_type}", traceparent, attributes)


@contextmanager
def _delivery(name: str, traceparent: str, attributes: Mapping[str, Any] | None) -> Iterator[None]:
    from opentelemetry.trace import SpanKind, Status, StatusCode
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    parent = TraceContextTextMapPropagator().extract({"traceparent": traceparent})
    delivering = _tracer.start_span(name, context=parent, kind=SpanKind.CONSUMER, attributes=attributes)
    try:
        yield
    except Exception as exc:
        delivering.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        raise
    finally:
        delivering.end()
