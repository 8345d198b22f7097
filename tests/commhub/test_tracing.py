"""Traces (commhub.tracing): off by default, importing nothing; on with the standard OTEL_*
variables; and, on, one trace from an agent's send_task (served ahead of Django, commhub.lean) to
the event's delivery on the receiving agent's SSE stream: the call's server span, its tool span,
its database work, the event's publication and its delivery, parent to child."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.handlers.asgi import ASGIHandler
from django.db import connection
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

import commhub.asgi
from commhub import tracing
from commhub.lean import lean_app
from hub_agents.services import token_create
from hub_events.models import Event
from tests.helpers.asgi import ask, scope
from tests.helpers.mcp import send_task_body

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def spans(monkeypatch) -> Iterator[InMemorySpanExporter]:
    """Tracing on in this process, into memory, as commhub.tracing.configure would switch it on
    (the official instrumentations, the hub's spans), and the ASGI application as commhub.asgi
    builds it when it is on: Django's handler with the instrumentation's middleware, agents'
    calls with their server span."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.instrument(tracer_provider=provider)
    try:
        monkeypatch.setattr(commhub.asgi, "http", ASGIHandler())
        monkeypatch.setattr(commhub.asgi, "lean", tracing.server_spans(lean_app))
        yield exporter
    finally:
        tracing.uninstrument()
        provider.shutdown()


async def send_and_receive(sender: str, coder: str) -> tuple[dict[str, Any], str]:
    """coder's SSE stream open; the sender's send_task through /mcp; the stream's frames until the
    new_task arrives. The call's result, and what the stream sent."""
    stream = ApplicationCommunicator(
        commhub.asgi.application, scope(method="GET", path="/events/coder", authorization=f"Bearer {coder}")
    )
    await stream.send_input({"type": "http.request", "body": b"", "more_body": False})
    start = await stream.receive_output(10)
    assert start["status"] == 200, start
    received = (await stream.receive_output(10))["body"].decode()
    assert received.startswith("retry:")  # subscribed: what is published from now on reaches it

    status, _, body = await ask(
        commhub.asgi.application, scope(authorization=f"Bearer {sender}"), send_task_body("trace me")
    )
    assert status == 200, body
    result = json.loads(json.loads(body)["result"]["content"][0]["text"])

    while "event: new_task" not in received:
        received += (await stream.receive_output(10))["body"].decode()
    await stream.send_input({"type": "http.disconnect"})
    await stream.wait(10)
    return result, received


def named(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    matching = [span for span in spans if span.name == name]
    assert len(matching) == 1, (name, [span.name for span in spans])
    return matching[0]


def children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    return [span for span in spans if span.parent is not None and span.parent.span_id == parent.context.span_id]


@pytest.mark.django_db(transaction=True)  # the views' database work runs on pool threads
def test_one_trace_from_send_task_to_its_delivery_on_the_agents_stream(spans, network):
    sender = token_create(network=network, role="member", name="sender")[1]
    coder = token_create(network=network, role="member", name="coder")[1]

    result, received = asyncio.run(send_and_receive(sender, coder))

    assert result["ok"] is True, result
    finished = spans.get_finished_spans()
    tool = named(finished, "tool send_task")
    server = tool.parent and next(span for span in finished if span.context.span_id == tool.parent.span_id)
    publish = named(finished, "publish new_task")
    deliver = named(finished, "deliver new_task")
    stream = next(span for span in finished if span.kind == SpanKind.SERVER and "/events" in str(span.attributes))

    # One trace, parent to child: the agent's call, its tool, the event, its delivery.
    assert server and server.kind == SpanKind.SERVER and server.parent is None
    assert server.attributes["http.target" if "http.target" in server.attributes else "url.path"] == "/mcp"
    assert publish.parent.span_id == tool.context.span_id
    assert deliver.parent.span_id == publish.context.span_id
    assert {tool.context.trace_id, publish.context.trace_id, deliver.context.trace_id} == {server.context.trace_id}
    assert tool.attributes["commhub.tool"] == "send_task"
    assert publish.kind == SpanKind.PRODUCER and deliver.kind == SpanKind.CONSUMER
    assert deliver.attributes["commhub.event.type"] == "new_task"
    assert deliver.attributes["commhub.audience"] == "coder"
    # Opening the stream was a request (and a trace) of its own.
    assert stream.context.trace_id != server.context.trace_id

    # The context travelled in the event's rows, never in what clients see.
    rows = Event.objects.filter(type="new_task")
    assert {row.trace[:-3] for row in rows} == {f"00-{server.context.trace_id:032x}-{publish.context.span_id:016x}"}
    frame = json.loads(next(line for line in received.splitlines() if line.startswith("data: "))[len("data: ") :])
    assert frame["payload"]["task_id"] == result["task_id"]
    assert "trace" not in frame and f"{server.context.trace_id:032x}" not in received

    if connection.vendor == "postgresql":  # psycopg's instrumentation (SQLite has none)
        # The event's rows are written by the send's seal (its WITH, below), not under the publication.
        assert sorted(span.name for span in children(finished, publish)) == ["deliver new_task"]
        in_call = {span.name for span in children(finished, tool)}
        assert {"SELECT", "INSERT", "WITH"} <= in_call, in_call  # its reads, its rows, the event's seal
    if settings.REDIS_URL:  # the doorbell rung after commit, on Redis (its instrumentation)
        assert "PUBLISH" in {span.name for span in children(finished, tool)}


@pytest.mark.django_db(transaction=True)
def test_a_call_that_is_refused_is_traced_as_an_outcome_not_a_failure(spans, network):
    sender = token_create(network=network, role="member", name="sender")[1]
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "send_task", "arguments": {}}}
    ).encode()

    status, _, reply = asyncio.run(ask(commhub.asgi.application, scope(authorization=f"Bearer {sender}"), body))

    assert status == 200, reply
    tool = named(spans.get_finished_spans(), "tool send_task")
    assert tool.attributes["commhub.error.code"] == "invalid_argument"
    assert tool.status.status_code.name == "UNSET" and not tool.events  # no exception recorded


# What a process with the given environment says: whether tracing is on, which OpenTelemetry
# modules it imported, and the spans the console exporter printed for one tool span.
PROBE = """
import sys, commhub.asgi
from django.conf import settings
from hub_core import tracing
with tracing.tool("get_all_status"):
    pass
with tracing.publishing("new_task", "n1", 1) as trace:
    pass
print("ON" if tracing.on() else "OFF", repr(trace))
print("IMPORTED", sorted({m.split(".")[1] for m in sys.modules if m.startswith("opentelemetry.")}))
print("MIDDLEWARE", [m for m in settings.MIDDLEWARE if "opentelemetry" in m])
"""


def probe(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    return subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=60
    )


def test_tracing_is_off_by_default_and_imports_nothing():
    ran = probe()

    assert ran.returncode == 0, ran.stderr
    assert "OFF ''" in ran.stdout
    assert "IMPORTED []" in ran.stdout
    assert "MIDDLEWARE []" in ran.stdout


@pytest.mark.slow  # a process of its own: seconds
def test_the_standard_variables_switch_tracing_on():
    ran = probe(OTEL_TRACES_EXPORTER="console", OTEL_SERVICE_NAME="hub-under-test")

    assert ran.returncode == 0, ran.stderr
    assert "ON '00-" in ran.stdout
    assert "MIDDLEWARE ['opentelemetry.instrumentation.django.middleware.otel_middleware._DjangoMiddleware']" in (
        ran.stdout
    )
    # The console exporter's spans, written at exit.
    assert '"name": "tool get_all_status"' in ran.stdout
    assert '"service.name": "hub-under-test"' in ran.stdout


@pytest.mark.slow  # a process of its own: seconds
def test_sdk_disabled_wins_over_an_exporter():
    ran = probe(OTEL_TRACES_EXPORTER="console", OTEL_SDK_DISABLED="true")

    assert ran.returncode == 0, ran.stderr
    assert "OFF ''" in ran.stdout and "IMPORTED []" in ran.stdout


@pytest.mark.slow  # a process of its own: seconds
def test_an_exporter_that_is_not_installed_stops_the_start():
    ran = probe(OTEL_TRACES_EXPORTER="zipkin_json")

    assert ran.returncode != 0
    assert "OTEL_TRACES_EXPORTER names 'zipkin_json', which is not installed" in ran.stderr


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, []),
        ({"OTEL_TRACES_EXPORTER": "none"}, []),
        ({"OTEL_SERVICE_NAME": "hub", "OTEL_TRACES_SAMPLER": "always_on"}, []),
        ({"OTEL_TRACES_EXPORTER": "console"}, ["console"]),
        ({"OTEL_TRACES_EXPORTER": "otlp,console"}, ["otlp_proto_http", "console"]),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, ["otlp_proto_http"]),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, ["otlp_proto_http"]),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, []),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "TRUE"}, []),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, ["otlp_proto_http"]),
    ],
)
def test_which_variables_switch_tracing_on(environ, expected):
    assert tracing.exporters(environ) == expected


def test_otlp_over_grpc_is_refused_with_what_to_do():
    with pytest.raises(ImproperlyConfigured, match="http/protobuf"):
        tracing.exporters({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
