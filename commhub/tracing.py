"""Traces (OpenTelemetry): off by default, switched on by the standard `OTEL_*` variables.

The rule, read once per process by `configure()` (commhub.asgi, gunicorn's post_fork, manage.py):
tracing is on when OTEL_TRACES_EXPORTER names an exporter other than "none", or when an OTLP
endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, the exporter
then being "otlp"), unless OTEL_SDK_DISABLED is "true". Exporters: "otlp" (OTLP over HTTP/protobuf,
the only OTLP protocol installed), "console" (one JSON object per span on stdout, for a look),
"none"; several, comma-separated. Everything else is the SDK's own reading of the standard variables:
OTEL_SERVICE_NAME (default "commhub") and OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER and
OTEL_TRACES_SAMPLER_ARG, OTEL_EXPORTER_OTLP_* (endpoint, headers, timeout, ...), OTEL_BSP_*.

Off, nothing from OpenTelemetry is imported and the hub's own spans (hub_core.tracing) cost a check.
On, the official instrumentations trace Django's requests (the dashboard, the admin, SSE streams,
session-signed REST), psycopg's statements and Redis's commands; agents' calls, which are served
ahead of Django (commhub.lean), get their server span from the official ASGI instrumentation
(`server_spans`). Incoming W3C `traceparent` headers are honoured, so an agent's own trace goes on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from hub_core import tracing as hub_tracing

_configured = False
_provider: Any = None  # the provider instrument() was given (None: the global one)

# OTLP over HTTP/protobuf is the one OTLP exporter installed (opentelemetry-exporter-otlp-proto-http).
_OTLP = "otlp_proto_http"


def exporters(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The trace exporters the standard variables ask for, by entry point name; [] when tracing is off."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    named = environ.get("OTEL_TRACES_EXPORTER", "").strip()
    if not named and (environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        named = "otlp"
    names = [name.strip().lower() for name in named.split(",") if name.strip()]
    if "none" in names:
        return []
    if "otlp" in names:
        protocol = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        if protocol and protocol != "http/protobuf":
            raise ImproperlyConfigured(
                f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r}: this hub exports OTLP over http/protobuf only "
                "(unset it, or set it to http/protobuf; a collector listens for it on port 4318)."
            )
    return list(dict.fromkeys(_OTLP if name == "otlp" else name for name in names))


def configure(environ: Mapping[str, str] = os.environ) -> bool:
    """Once per process, at start (later calls do nothing): if the standard variables switch tracing
    on, install the SDK's tracer provider with their exporters and instrument Django, psycopg and
    Redis. Before Django's handler is built: the Django instrumentation adds a middleware. Whether on."""
    global _configured
    if _configured:
        return hub_tracing.on()
    _configured = True
    names = exporters(environ)
    if not names:
        return False
    from opentelemetry import trace
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create()  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "commhub"}))
    provider = TracerProvider(resource=resource)  # the sampler from OTEL_TRACES_SAMPLER(_ARG)
    for name in names:
        provider.add_span_processor(BatchSpanProcessor(_exporter(name)))
    trace.set_tracer_provider(provider)
    instrument()
    return True


def _exporter(name: str) -> Any:
    from importlib.metadata import entry_points

    found = entry_points(group="opentelemetry_traces_exporter", name=name)
    if not found:
        known = sorted({"otlp", "none", *(point.name for point in entry_points(group="opentelemetry_traces_exporter"))})
        raise ImproperlyConfigured(f"OTEL_TRACES_EXPORTER names {name!r}, which is not installed (known: {known}).")
    return next(iter(found)).load()()


def instrument(tracer_provider: Any = None) -> None:
    """The official instrumentations of Django, psycopg and Redis, and the hub's own spans, through
    this provider (None: the global one). A psycopg connection opened before is not traced."""
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor

    global _provider
    _provider = tracer_provider
    # The SQL commenter stays off: statements keep their text (and pg_stat_statements its grouping).
    DjangoInstrumentor().instrument(tracer_provider=tracer_provider)
    PsycopgInstrumentor().instrument(tracer_provider=tracer_provider)
    RedisInstrumentor().instrument(tracer_provider=tracer_provider)
    hub_tracing.switch_on(tracer_provider)


def uninstrument() -> None:
    """Undo `instrument()` (tests)."""
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor

    global _provider
    hub_tracing.switch_off()
    _provider = None
    for instrumentor in (RedisInstrumentor(), PsycopgInstrumentor(), DjangoInstrumentor()):
        instrumentor.uninstrument()


def server_spans(app: Any) -> Any:
    """`app` with a server span per request (the official ASGI instrumentation), when tracing is on;
    else `app` itself, untouched: for agents' calls, which Django's middleware never sees."""
    if not hub_tracing.on():
        return app
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

    # No spans for each receive and send: a long-poll's progress would make dozens.
    return OpenTelemetryMiddleware(app, tracer_provider=_provider, exclude_spans=["receive", "send"])
