"""Hostile input to the REST API at /api/v1/ (and the dashboard that shows what it stores).

Every endpoint gets Hypothesis-made paths, query strings, bodies, content types and methods: the
answer is never a 5xx nor a stack trace, and every 4xx is `{"ok": false, "error": <str>, "message":
<str>}`. A deterministic test writes SQL and HTML into every text field of the writing tools and
reads it back verbatim through the API, and escaped on every dashboard page.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection
from django.http import HttpResponse
from django.test import Client
from django.utils.html import escape
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

import hub_api.agents
import hub_api.budgets
import hub_api.caps
import hub_api.channels
import hub_api.schedules
import hub_api.search
import hub_api.tasks
import hub_api.webhooks
from hub_agents.models import AgentSession, Network
from hub_agents.services import membership_set, token_authenticate, token_create, user_get_or_create
from hub_api.endpoints import operation_tool
from hub_tasks.models import Completion, InboxMessage, Task
from hub_tools.tools import TOOLS_BY_NAME, Tool
from tests.helpers import bearer
from tests.helpers.calls import send_task
from tests.helpers.hostile import (
    FUZZ,
    HOSTILE_TEXT,
    HTML,
    HUGE_INTEGERS,
    SQL,
    Raw,
    World,
    assert_no_leak,
    dumps,
    json_values,
    raw_bodies,
    tool_arguments,
    tool_outcome,
)

# /mcp and the inbox endpoint run their database work through hub_core.waiting's pool: in these rolled-back
# tests it runs on the test's own thread and connection (tests/plugins/pool.py), so it sees the test's rows.
pytestmark = pytest.mark.django_db

API = "/api/v1/"


@dataclass(frozen=True)
class Endpoint:
    method: str
    pattern: str  # as in the URL conf
    tool: str

    @property
    def definition(self) -> Tool:
        return operation_tool(self.tool)

    @property
    def path_params(self) -> list[str]:
        return re.findall(r"<str:(\w+)>", self.pattern)


ENDPOINTS = [
    Endpoint("get", "sessions", "get_all_status"),
    Endpoint("post", "sessions/report", "report_status"),
    Endpoint("get", "sessions/report", "get_session_status"),
    Endpoint("get", "sessions/<str:alias>", "get_session_status"),
    Endpoint("get", "sessions/<str:alias>/inbox", "get_inbox"),
    Endpoint("post", "sessions/<str:alias>/inbox/<str:message_id>/ack", "ack_inbox"),
    Endpoint("get", "tasks", "list_tasks"),
    Endpoint("post", "tasks", "send_task"),
    Endpoint("get", "tasks/<str:task_id>", "get_task"),
    Endpoint("get", "tasks/<str:task_id>/thread", "get_thread"),
    Endpoint("get", "search", "search"),
    Endpoint("post", "tasks/<str:task_id>/ack", "send_ack"),
    Endpoint("post", "tasks/<str:task_id>/retry", "retry_task"),
    Endpoint("post", "tasks/<str:task_id>/cancel", "cancel_task"),
    Endpoint("post", "tasks/<str:task_id>/reassign", "reassign_task"),
    Endpoint("post", "messages", "send_message"),
    Endpoint("post", "replies", "send_reply"),
    Endpoint("post", "broadcasts", "broadcast"),
    Endpoint("get", "completions", "get_completions"),
    Endpoint("post", "completions", "report_completion"),
    # Beyond the contract: skills and the open pool.
    Endpoint("get", "agents", "find_agents"),
    Endpoint("get", "pool", "list_open_tasks"),
    Endpoint("post", "tasks/<str:task_id>/claim", "claim_task"),
    # Beyond the contract: questions to a person.
    Endpoint("post", "tasks/<str:task_id>/questions", "ask_operator"),
    Endpoint("get", "questions", "list_questions"),
    Endpoint("post", "questions/<str:question_id>/answer", "answer_question"),
    # Beyond the contract: approvals (an id no approval has: bodies are refused before it is looked up).
    Endpoint("get", "approvals", "list_approvals"),
    Endpoint("post", "approvals/<str:approval_id>/decide", "decide_approval"),
    # Beyond the contract: channels (an id no channel has: bodies are refused before it is looked up).
    Endpoint("get", "channels", "channel_list"),
    Endpoint("post", "channels", "channel_create"),
    Endpoint("get", "channels/<str:channel_id>", "channel_info"),
    Endpoint("post", "channels/<str:channel_id>/join", "channel_join"),
    Endpoint("post", "channels/<str:channel_id>/leave", "channel_leave"),
    Endpoint("post", "channels/<str:channel_id>/configure", "channel_configure"),
    Endpoint("get", "channels/<str:channel_id>/posts", "channel_read"),
    Endpoint("post", "channels/<str:channel_id>/posts", "channel_post"),
    # Beyond the contract: nodes.
    Endpoint("get", "nodes", "list_nodes"),
    Endpoint("post", "nodes/report", "report_node"),
    Endpoint("get", "nodes/commands", "node_commands"),
    Endpoint("post", "nodes/commands", "node_command"),
    Endpoint("post", "nodes/commands/<str:command_id>/ack", "node_command_ack"),
    # Beyond the tools: webhooks (REST only; the fuzzing token is a member's, so every one that gets
    # past its arguments is refused: no URL is resolved).
    Endpoint("get", "webhooks", "webhook_list"),
    Endpoint("post", "webhooks", "webhook_create"),
    Endpoint("post", "webhooks/<str:webhook_id>/enable", "webhook_enable"),
    Endpoint("post", "webhooks/<str:webhook_id>/disable", "webhook_disable"),
    Endpoint("post", "webhooks/<str:webhook_id>/delete", "webhook_delete"),
    Endpoint("get", "webhooks/<str:webhook_id>/deliveries", "webhook_deliveries"),
    # Beyond the contract: schedules (an id no schedule has: bodies are refused before it is looked up;
    # the fuzzing token is a member's, so a create that gets past its arguments is refused).
    Endpoint("get", "schedules", "schedule_list"),
    Endpoint("post", "schedules", "schedule_create"),
    Endpoint("post", "schedules/<str:schedule_id>/pause", "schedule_pause"),
    Endpoint("post", "schedules/<str:schedule_id>/resume", "schedule_resume"),
    Endpoint("post", "schedules/<str:schedule_id>/run", "schedule_run_now"),
    Endpoint("post", "schedules/<str:schedule_id>/delete", "schedule_delete"),
    # Beyond the contract: concurrency caps (the fuzzing token is a member's: every change is refused).
    Endpoint("get", "caps", "cap_list"),
    Endpoint("post", "caps", "cap_set"),
    Endpoint("post", "caps/<str:cap_id>/delete", "cap_delete"),
    # Beyond the contract: budgets (the fuzzing token is a member's: every change is refused).
    Endpoint("get", "budgets", "budget_list"),
    Endpoint("post", "budgets", "budget_set"),
    Endpoint("post", "budgets/<str:budget_id>/delete", "budget_delete"),
]
GETS = [endpoint for endpoint in ENDPOINTS if endpoint.method == "get"]
POSTS = [endpoint for endpoint in ENDPOINTS if endpoint.method == "post"]


def test_the_fuzzed_endpoints_are_every_endpoint_in_the_url_conf() -> None:
    served = {
        (method, str(pattern.pattern))
        for pattern in [
            *hub_api.agents.urlpatterns,
            *hub_api.tasks.urlpatterns,
            *hub_api.channels.urlpatterns,
            *hub_api.search.urlpatterns,
            *hub_api.webhooks.urlpatterns,
            *hub_api.schedules.urlpatterns,
            *hub_api.caps.urlpatterns,
            *hub_api.budgets.urlpatterns,
        ]
        for method in ("get", "post", "put", "patch", "delete")
        if hasattr(pattern.callback.cls, method)
    }

    assert served == {(endpoint.method, endpoint.pattern) for endpoint in ENDPOINTS}


# --- checking answers ----------------------------------------------------------------------------


def assert_api_answer(response: HttpResponse, sent: bytes, method: str = "GET") -> dict[str, Any] | None:
    """Never a 5xx or a redirect; a 4xx is the error shape; no traceback anywhere."""
    status = response.status_code
    assert status < 500, (status, response.content[:2000])
    assert 200 <= status < 300 or 400 <= status < 500, (status, response.content[:2000])
    if method == "HEAD":
        return None
    assert_no_leak(response.content, sent)
    assert response["Content-Type"].startswith("application/json"), (response["Content-Type"], response.content[:500])
    body = json.loads(response.content)
    if status >= 400:
        assert isinstance(body, dict) and body.get("ok") is False, body
        assert isinstance(body.get("error"), str) and body["error"].strip(), body
        assert isinstance(body.get("message"), str) and body["message"].strip(), body
    elif method in ("GET", "POST"):
        assert isinstance(body, dict) and body.get("ok") is True, body
    return body


def refused_answer(response: HttpResponse, sent: bytes, status: int, error: str, **extra: Any) -> dict[str, Any]:
    body = assert_api_answer(response, sent, "POST")
    assert body is not None
    assert response.status_code == status and body["error"] == error, (response.status_code, body)
    for key, value in extra.items():
        assert body.get(key) == value, (key, body)
    return body


# --- strategies ----------------------------------------------------------------------------------


def encoded(text: str) -> str:
    """Percent-encoded for a URL, lone surrogates included (as the bytes UTF-8 cannot have)."""
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


RAW_SEGMENTS = ("%00", "%ff", "%ED%A0%80", "%C0%AF", "%2e%2e", "%25", "%", "%zz", ".", "..", "%20", "x" * 300)
RAW_QUERY = (
    "%",
    "%zz",
    "&&&",
    "=",
    "==x",
    "a=1;b=2",
    "limit=1&limit=2",
    "limit=%ff",
    "limit=%00",
    "alias=%ED%A0%80",
    "since=%00",
    "limit=" + "9" * 400,
    "wait_seconds=1e999",
    "wait_seconds=NaN",
    "network_id=%00",
    "%00=%00",
)
CONTENT_TYPES = (
    "application/json",
    "application/json; charset=utf-8",
    "APPLICATION/JSON",
    "application/json;charset=latin-1",
    "application/json; charset=utf-16",
    "application/json; boundary",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "multipart/form-data",
    "application/merge-patch+json",
    "*/*",
    ";",
    "",
)
ACCEPTS = ("application/json", "*/*", "text/html", "application/xml", "", "application/json; version=99", "\x00")


@st.composite
def path_segment(draw: st.DrawFn, known: list[Any]) -> str:
    kind = draw(st.sampled_from(["known", "known", "raw", "hostile", "text"]))
    if kind == "known":
        return encoded(str(draw(st.sampled_from(known))))
    if kind == "raw":
        return draw(st.sampled_from(RAW_SEGMENTS))
    if kind == "hostile":
        return encoded(draw(st.sampled_from([text for text in HOSTILE_TEXT if 0 < len(text) < 2000])))
    return encoded(draw(st.text(min_size=1, max_size=30)))


@st.composite
def paths(draw: st.DrawFn, endpoint: Endpoint, known: dict[str, list[Any]]) -> str:
    path = endpoint.pattern
    for name in endpoint.path_params:
        path = path.replace(f"<str:{name}>", draw(path_segment(known.get(name, ["x"])), label=name))
    return API + path


def _query_text(value: Any) -> str:
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, str):
        return value
    return json.dumps(value) if isinstance(value, list | dict) else str(value)


_WAITING = re.compile(r"-?[0-9]{1,30}(\.[0-9]{1,30})?([eE][+-]?[0-9]{1,3})?")


@st.composite
def query_strings(draw: st.DrawFn, endpoint: Endpoint, known: dict[str, list[Any]]) -> str:
    """Arguments as a query string: known, plausible or hostile values, unknown names, broken encoding."""
    arguments = draw(tool_arguments(endpoint.definition, known), label="arguments")
    pairs = []
    for name, value in arguments.items():
        if name in endpoint.path_params and draw(st.booleans()):
            continue  # mostly leave out what the path already says
        text = _query_text(value)
        if name == "wait_seconds" and _WAITING.fullmatch(text) and 0 < float(text) <= 60:
            text = "0"  # an empty inbox would wait that long
        pairs.append(f"{encoded(name)}={encoded(text)}")
    pairs += draw(st.lists(st.sampled_from(RAW_QUERY), max_size=2), label="raw")
    return "&".join(draw(st.permutations(pairs)))


@st.composite
def bodies(draw: st.DrawFn, endpoint: Endpoint, known: dict[str, list[Any]]) -> bytes:
    """A POST body: the tool's arguments (plausible or hostile), any JSON, or bytes that are not JSON."""
    kind = draw(st.sampled_from(["arguments", "arguments", "arguments", "arguments", "json", "raw", "empty"]))
    if kind == "arguments":
        arguments = draw(tool_arguments(endpoint.definition, known), label="arguments")
        for name in endpoint.path_params:
            if name in arguments and draw(st.integers(0, 3)):
                del arguments[name]  # mostly leave out what the path already says
        return dumps(arguments, ascii_only=draw(st.booleans()))
    if kind == "json":
        return dumps(draw(json_values), ascii_only=draw(st.booleans()))
    if kind == "raw":
        return draw(raw_bodies())
    return b""


GARBAGE = ["Bearer ", "Bearer \x00", "Basic Og==", "Bearer ntok_x y", "bearer"]  # no credential at all


@st.composite
def credentials(draw: st.DrawFn, hostile_world: World, others: dict[str, str]) -> dict[str, str]:
    kind = draw(st.sampled_from(["member", "member", "member", "viewer", "outsider", "none", "garbage"]))
    if kind == "member":
        return {"Authorization": f"Bearer {hostile_world.token}"}
    if kind in others:
        return {"Authorization": f"Bearer {others[kind]}"}
    if kind == "none":
        return {}
    return {"Authorization": draw(st.sampled_from(GARBAGE))}


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture
def others(network: Network, other_network: Network) -> dict[str, str]:
    return {
        "viewer": token_create(network=network, role="viewer", name="viewer")[1],
        "outsider": token_create(network=other_network, role="member", name="outsider")[1],
    }


# --- properties ----------------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", GETS, ids=[f"{e.tool} {e.pattern}" for e in GETS])
@hypothesis_settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_any_query_string_on_any_get_endpoint_is_answered_without_a_5xx(
    client: Client, hostile_world: World, data: st.DataObject, endpoint: Endpoint
) -> None:
    path = data.draw(paths(endpoint, hostile_world.known), label="path")
    query = data.draw(query_strings(endpoint, hostile_world.known), label="query")

    response = client.get(f"{path}?{query}", headers=bearer(hostile_world.token))

    assert_api_answer(response, f"{path}?{query}".encode())


@pytest.mark.parametrize("endpoint", POSTS, ids=[e.tool for e in POSTS])
@hypothesis_settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_any_body_on_any_post_endpoint_is_answered_without_a_5xx(
    client: Client, hostile_world: World, data: st.DataObject, endpoint: Endpoint
) -> None:
    path = data.draw(paths(endpoint, hostile_world.known), label="path")
    body = data.draw(bodies(endpoint, hostile_world.known), label="body")
    query = data.draw(st.sampled_from(["", "", "?alias=x", "?%00=%ff", "?task_id=t"]), label="query")

    response = client.generic(
        "POST", path + query, body, content_type="application/json", headers=bearer(hostile_world.token)
    )

    assert_api_answer(response, path.encode() + query.encode() + body, "POST")


@FUZZ
@given(data=st.data(), endpoint=st.sampled_from(ENDPOINTS))
def test_any_content_type_accept_header_or_credential_is_answered_without_a_5xx(
    client: Client, hostile_world: World, others: dict[str, str], data: st.DataObject, endpoint: Endpoint
) -> None:
    path = data.draw(paths(endpoint, hostile_world.known), label="path")
    headers = data.draw(credentials(hostile_world, others), label="credentials")
    headers["Accept"] = data.draw(st.sampled_from(ACCEPTS), label="accept")
    content_type = data.draw(st.sampled_from(CONTENT_TYPES), label="content_type")
    body = data.draw(bodies(endpoint, hostile_world.known), label="body") if endpoint.method == "post" else b""

    # generic(): post() would re-encode the bytes for a charset named in the content type.
    response = client.generic(endpoint.method.upper(), path, body, content_type=content_type, headers=headers)

    assert_api_answer(response, path.encode() + body, endpoint.method.upper())
    if headers.get("Authorization", GARBAGE[0]) in GARBAGE:  # (a real token may start "ntok_x" too)
        assert response.status_code >= 400, response.content  # nothing without a valid token


@FUZZ
@given(
    data=st.data(),
    endpoint=st.sampled_from(ENDPOINTS),
    method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]),
)
def test_any_method_on_any_endpoint_is_answered_without_a_5xx(
    client: Client, hostile_world: World, data: st.DataObject, endpoint: Endpoint, method: str
) -> None:
    path = data.draw(paths(endpoint, hostile_world.known), label="path")
    body = data.draw(st.one_of(st.just(b"{}"), st.binary(max_size=30)), label="body")

    response = client.generic(
        method, path, body, content_type="application/json", headers={"Authorization": f"Bearer {hostile_world.token}"}
    )

    assert_api_answer(response, path.encode() + body, method)
    allowed = {other.method.upper() for other in ENDPOINTS if other.pattern == endpoint.pattern} | {"OPTIONS"}
    if not endpoint.path_params and method not in allowed | {"HEAD"}:
        assert response.status_code == 405, response.content


@FUZZ
@given(endpoint=st.sampled_from(POSTS), extra=st.integers(min_value=1, max_value=5000))
def test_a_body_over_the_size_limit_is_413_whatever_it_holds(
    client: Client, hostile_world: World, settings, endpoint: Endpoint, extra: int
) -> None:
    settings.COMMHUB_MAX_REQUEST_BYTES = 1024
    body = b'{"alias": "coder", "task": "' + b"x" * (1024 + extra) + b'"}'
    path = filled(endpoint, hostile_world)

    response = client.post(path, data=body, content_type="application/json", headers=bearer(hostile_world.token))

    refused_answer(response, body, 413, "request_too_large")


# --- deterministic edges -------------------------------------------------------------------------


def filled(endpoint: Endpoint, hostile_world: World) -> str:
    path = endpoint.pattern.replace("<str:alias>", "coder").replace("<str:message_id>", hostile_world.message_id)
    path = path.replace("<str:task_id>", hostile_world.task_id).replace("<str:question_id>", hostile_world.question_id)
    path = path.replace("<str:channel_id>", "chn_0000000000000000").replace("<str:webhook_id>", "1")
    return API + path.replace("<str:approval_id>", "apr_0000000000000000")


BASE_BODIES = {
    "report_status": {"resume_id": "r-coder", "alias": "coder", "status": "idle"},
    "ack_inbox": {},
    "send_task": {"alias": "coder", "task": "another task"},
    "send_ack": {},
    "retry_task": {},
    "cancel_task": {},
    "reassign_task": {"new_alias": "reviewer"},
    "send_message": {"alias": "coder", "message": "hi"},
    "send_reply": {"alias": "lead", "text": "noted"},
    "broadcast": {"message": "everyone"},
    "report_completion": {"alias": "coder", "task": "some other work", "result": "done"},
    "claim_task": {"alias": "coder"},
    "ask_operator": {"question": "which parser?"},
    "answer_question": {"answer": "the new one"},
    "decide_approval": {"decision": "approve"},
    "channel_create": {"name": "fuzz-room", "alias": "coder"},
    "channel_join": {"alias": "coder"},
    "channel_leave": {"alias": "coder"},
    "channel_configure": {"alias": "coder"},
    "channel_post": {"alias": "coder", "content": "hi"},
    "report_node": {"node_id": "box-1"},
    "webhook_create": {"url": "https://example.com/hook"},
    "webhook_enable": {},
    "webhook_disable": {},
    "webhook_delete": {},
    "schedule_create": {"name": "fuzz-nightly", "alias": "coder", "task": "review", "cron": "0 2 * * *"},
    "schedule_pause": {},
    "schedule_resume": {},
    "schedule_run_now": {},
    "schedule_delete": {},
    "node_command": {"node_id": "box-1", "kind": "pause"},
    "node_command_ack": {"ok": True},
    "cap_set": {"scope": "runtime", "value": "codex", "limit": 2},
    "cap_delete": {},
    "budget_set": {"period": "day", "limit_usd": 2.5},
    "budget_delete": {},
}
BAD_NUMBERS = {
    "10**400": 10**400,
    "-10**400": -(10**400),
    "2**64": 2**64,
    "1e999": Raw("1e999"),
    "NaN": Raw("NaN"),
    "-Infinity": Raw("-Infinity"),
    "true": True,
    "'5'": "5",
    "[1]": [1],
}
BAD_TEXT = {"nul": "a\x00b", "surrogate": "\ud800", "object": {"a": ["b"]}, "list": ["x"], "huge": HUGE_INTEGERS[0]}


def test_every_post_endpoint_has_a_base_body() -> None:
    assert set(BASE_BODIES) == {endpoint.tool for endpoint in POSTS}


def wrong_refusals(
    hostile_world: World, endpoint: Endpoint, cases: dict[str, Any], kinds: tuple[str, ...]
) -> list[Any]:
    """One bad argument on top of a good body, for each argument of these kinds; those not refused by name."""
    client = Client(raise_request_exception=False)  # collect every failing case, not just the first
    wrong = []
    for name, schema in endpoint.definition.input_properties.items():
        if schema["type"] not in kinds or name in endpoint.path_params:
            continue
        field = f"{name}[0]" if schema["type"] == "array" else name
        for label, value in cases.items():
            body = dumps({**BASE_BODIES[endpoint.tool], name: [value] if schema["type"] == "array" else value})
            response = client.post(
                filled(endpoint, hostile_world),
                data=body,
                content_type="application/json",
                headers=bearer(hostile_world.token),
            )
            if response.status_code >= 500:
                wrong.append((name, label, response.status_code))
                continue
            answer = assert_api_answer(response, body, "POST")
            if response.status_code != 400 or answer.get("field") != field:  # type: ignore[union-attr]
                wrong.append((name, label, response.status_code, answer))
    return wrong


NUMERIC_POSTS = [
    e for e in POSTS if any(p["type"] in ("integer", "number") for p in e.definition.input_properties.values())
]


@pytest.mark.parametrize("endpoint", NUMERIC_POSTS, ids=[e.tool for e in NUMERIC_POSTS])
def test_a_bad_number_in_a_body_is_a_400_naming_the_field(hostile_world: World, endpoint: Endpoint) -> None:
    wrong = wrong_refusals(hostile_world, endpoint, BAD_NUMBERS, ("integer", "number"))

    assert not wrong, wrong


def test_bad_text_in_any_text_field_of_any_body_is_a_400_naming_the_field(hostile_world: World) -> None:
    wrong = [(e.tool, *case) for e in POSTS for case in wrong_refusals(hostile_world, e, BAD_TEXT, ("string", "array"))]

    assert not wrong, wrong


# GETs with a required query parameter: a good value of it goes along with each other bad one.
REQUIRED_QUERY = {"search": "query=parser&"}


def test_bad_text_in_any_query_parameter_of_any_get_is_a_400_naming_it(client: Client, hostile_world: World) -> None:
    wrong = []
    for endpoint, (name, schema) in [(e, param) for e in GETS for param in e.definition.input_properties.items()]:
        if name in endpoint.path_params or (endpoint.pattern == "sessions/report" and name == "alias"):
            continue
        required = "" if name in endpoint.definition.required else REQUIRED_QUERY.get(endpoint.tool, "")
        for value in ("%00", "a%00b", "%ED%A0%80", "9" * 400, "1e999", "NaN", "%ff%fe"):
            path = f"{filled(endpoint, hostile_world)}?{required}{name}={value}"
            response = client.get(path, headers=bearer(hostile_world.token))
            answer = assert_api_answer(response, path.encode())
            checked = schema["type"] != "string" or "enum" in schema or "format" in schema
            if not checked and "%00" not in value:
                continue  # plain text that is merely odd ("1e999", U+FFFD for bad UTF-8): any clean answer
            if response.status_code != 400 or answer.get("field") != name:  # type: ignore[union-attr]
                wrong.append((endpoint.pattern, name, value, response.status_code, answer))

    assert not wrong, wrong


# A NUL or an over-long id must be refused; other odd segments ("..", U+FFFD for bad UTF-8) are just text.
SEGMENTS = {
    "%00": True,
    "a%00b": True,
    "x" * 201: True,
    "%ED%A0%80": False,
    "%ff": False,
    "%20": False,
    "%2e%2e": False,
}


def test_bad_text_in_a_path_segment_is_answered_in_the_error_shape(client: Client, hostile_world: World) -> None:
    for endpoint, (segment, must_refuse) in [(e, c) for e in ENDPOINTS if e.path_params for c in SEGMENTS.items()]:
        path = API + re.sub(r"<str:\w+>", segment, endpoint.pattern)

        response = client.generic(
            endpoint.method.upper(), path, b"{}", content_type="application/json", headers=bearer(hostile_world.token)
        )

        assert_api_answer(response, path.encode(), endpoint.method.upper())
        if must_refuse:
            assert 400 <= response.status_code < 500, (endpoint.pattern, segment, response.content)


def test_a_body_nested_as_deep_as_the_parser_allows_never_crashes_the_answer(hostile_world: World) -> None:
    """Near the recursion limit a value parses, then its echo (repr) in the refusal must not overflow."""
    client = Client(raise_request_exception=False)
    failures = []
    limit = sys.getrecursionlimit()
    for depth in range(limit - 150, limit + 10):
        nested = "[" * depth + "]" * depth
        for path, body in [
            (API + "tasks", f'{{"alias": "coder", "task": "t", "priority": {nested}}}'),
            (API + "broadcasts", f'{{"message": "m", "filter_status": {nested}}}'),
        ]:
            response = client.post(
                path, data=body, content_type="application/json", headers=bearer(hostile_world.token)
            )
            if response.status_code >= 500:
                failures.append((path, depth, response.status_code))
            else:
                assert_api_answer(response, body.encode(), "POST")
    assert not failures, failures


def test_a_body_nested_absurdly_deep_is_invalid_json(client: Client, hostile_world: World) -> None:
    for depth in (10_000, 100_000):
        body = b'{"alias": "coder", "task": "t", "priority": ' + b"[" * depth + b"]" * depth + b"}"

        refused_answer(
            client.post(API + "tasks", body, content_type="application/json", headers=bearer(hostile_world.token)),
            body,
            400,
            "invalid_json",
        )


# --- SQL and HTML: stored verbatim, shown escaped ------------------------------------------------


@dataclass
class Api:
    client: Client
    token: str

    def write(self, path: str, body: dict[str, Any], status: int = 201) -> dict[str, Any]:
        response = self.client.post(
            API + path, data=json.dumps(body), content_type="application/json", headers=bearer(self.token)
        )
        assert response.status_code == status, response.content
        assert response.json()["ok"] is True, response.content
        return response.json()

    def read(self, path: str, **query: Any) -> dict[str, Any]:
        response = self.client.get(API + path, query, headers=bearer(self.token))
        assert response.status_code == 200, response.content
        return response.json()

    def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        """Reads keyed by alias go through /mcp: an alias with a "/" has no URL path of its own."""
        outcome = tool_outcome(self.client, self.token, name, arguments, version="2025-11-25")
        assert outcome["ok"] is True, outcome
        return outcome


STATUS_TEXT_FIELDS = [
    name
    for name, schema in TOOLS_BY_NAME["report_status"].input_properties.items()
    if schema["type"] == "string" and "enum" not in schema and name not in ("alias", "channels", "network_id")
]
PAYLOADS = [*SQL, *HTML]
TABLES = {"hub_tasks_task", "hub_tasks_inboxmessage", "hub_tasks_completion", "hub_agents_agentsession"}


def assert_shown_escaped(html: str, payload: str, page: str) -> None:
    assert payload not in html, f"{page} shows {payload!r} unescaped"
    assert escape(payload) in html, f"{page} does not show {payload!r} at all"


@pytest.mark.parametrize("payload", PAYLOADS)
def test_sql_and_html_in_every_text_field_are_stored_verbatim_and_shown_escaped(
    client: Client, network: Network, payload: str
) -> None:
    api = Api(client, token_create(network=network, role="member", name="writer")[1])

    def value(field: str) -> str:
        return f"{payload} {field}"

    alias, lead, boss = value("agent"), value("lead"), value("boss")
    # channels is a JSON array of plain strings: a payload with a quote opens the array's string.
    channels = f'["{payload}"]' if '"' not in payload else "[" + payload + '"]'
    report = {field: value(f"report {field}") for field in STATUS_TEXT_FIELDS} | {
        "alias": alias,
        "status": "working",
        "channels": channels,
    }
    api.write("sessions/report", report, status=200)
    session = api.tool("get_session_status", alias=alias)["session"]
    stored_session = {field: session[field] for field in report if field in session}
    assert stored_session == {field: report[field] for field in stored_session}
    # node_name is kept on the node, not the session; idempotency_key is the call's, kept with its answer.
    assert set(report) - set(stored_session) == {"node_name", "idempotency_key"}

    user = user_get_or_create(username="operator")
    membership_set(user=user, network=network, role="owner")
    client.force_login(user)
    fleet = client.get("/fleet/")
    assert fleet.status_code == 200
    assert_shown_escaped(fleet.content.decode(), payload, "fleet (working)")

    parent = api.write("tasks", {"alias": lead, "task": value("parent task"), "from_session": boss})
    sent_body = {
        "alias": alias,
        "task": value("task"),
        "context": value("context"),
        "from_session": lead,
        "client_request_id": value("client_request_id"),
        "parent_task_id": parent["task_id"],
        "priority": "high",
    }
    task_id = api.write("tasks", sent_body)["task_id"]
    api.write("messages", {"alias": alias, "message": value("message"), "from_session": lead})
    assert (
        api.write("broadcasts", {"message": value("broadcast"), "filter_server": report["server"]})["recipients"] == 1
    )

    inbox = api.tool("get_inbox", alias=alias, limit=100)["messages"]
    assert sorted((m["type"], m["content"], m["context"], m["from_session"]) for m in inbox) == sorted(
        [
            ("task", value("task"), value("context"), lead),
            ("message", value("message"), None, lead),
            ("broadcast", value("broadcast"), None, "hub"),
        ]
    )

    closed = api.write(
        "completions",
        {"alias": alias, "task": task_id, "result": value("result"), "artifacts": [value("artifact")], "score": 7},
    )
    assert closed["task_id"] == task_id
    free = api.write("completions", {"alias": alias, "task": value("completed work"), "result": value("result 2")})
    assert free["task_id"] is None

    task = api.read(f"tasks/{task_id}")["task"]
    assert {
        key: task[key] for key in ("content", "context", "from_name", "to_name", "client_request_id", "result")
    } == {
        "content": value("task"),
        "context": value("context"),
        "from_name": lead,
        "to_name": alias,
        "client_request_id": value("client_request_id"),
        "result": value("result"),
    }
    assert task["status"] == "replied"
    completions = api.read("completions", alias=alias)["completions"]
    assert sorted((c["task"], c["result"], c["artifacts"]) for c in completions) == sorted(
        [
            (task_id, value("result"), json.dumps([value("artifact")], ensure_ascii=False)),
            (value("completed work"), value("result 2"), None),
        ]
    )
    recent = api.tool("get_session_status", alias=alias)["recent_completions"]
    assert {c["result"] for c in recent} == {value("result"), value("result 2")}
    chained = api.tool("get_inbox", alias=boss)["messages"]
    assert [(m["type"], m["content"], m["from_session"]) for m in chained] == [
        ("chained_reply", value("result"), alias)
    ]
    assert api.read("tasks", from_name=lead)["tasks"][0]["task_id"] == task_id

    pages = {
        "fleet": "/fleet/",
        "tasks": "/tasks/",
        "task": f"/tasks/{task_id}/",
        "parent task": f"/tasks/{parent['task_id']}/",
        "completions": "/completions/",
        "filtered tasks": "/tasks/?"
        + "&".join(f"{k}={encoded(v)}" for k, v in {"alias": alias, "text": payload}.items()),
        "tasks fragment": "/tasks/?fragment=tasks",
    }
    for page, url in pages.items():
        response = client.get(url)
        assert response.status_code == 200, (page, response.status_code)
        assert_shown_escaped(response.content.decode(), payload, page)

    assert TABLES <= set(connection.introspection.table_names())
    assert Task.objects.count() == 2 and Completion.objects.count() == 2
    assert AgentSession.objects.count() == 1 and InboxMessage.objects.count() >= 4


# --- the dashboard's own inputs ------------------------------------------------------------------


DASHBOARD_PAGES = ("/fleet/", "/tasks/", "/completions/", "/audit/", "/dispatch/")
DASHBOARD_PARAMS = ("alias", "sender", "text", "status", "page", "network", "fragment")


@pytest.fixture
def operator(client: Client, hostile_world: World) -> Client:
    user = user_get_or_create(username="operator")
    membership_set(user=user, network=hostile_world.network, role="owner")
    client.force_login(user)
    return client


@hypothesis_settings(FUZZ, max_examples=60)
@given(
    page=st.sampled_from(DASHBOARD_PAGES),
    query=st.dictionaries(
        st.sampled_from(DASHBOARD_PARAMS),
        st.one_of(st.sampled_from(HOSTILE_TEXT[:12] + SQL + HTML), st.text()),
        max_size=4,
    ),
)
def test_hostile_dashboard_filters_are_answered_without_a_5xx_and_shown_escaped(
    operator: Client, hostile_world: World, page: str, query: dict[str, str]
) -> None:
    url = page + "?" + "&".join(f"{key}={encoded(value)}" for key, value in query.items())

    response = operator.get(url)

    assert response.status_code < 500, (url, response.status_code)
    assert_no_leak(response.content, url.encode())
    for payload in HTML:
        assert payload.encode() not in response.content, url


def test_a_nul_in_a_task_filter_is_not_a_server_error(operator: Client) -> None:
    """PostgreSQL cannot compare text with NUL: the filter must not reach it as it is."""
    operator.raise_request_exception = False  # report every filter that fails, not just the first
    statuses = {name: operator.get("/tasks/", {name: "a\x00b"}).status_code for name in ("alias", "sender", "text")}

    assert statuses == {"alias": 200, "sender": 200, "text": 200}


def test_a_task_filter_with_url_syntax_survives_paging(operator: Client, hostile_world: World) -> None:
    """The pager links repeat the filters: "#", "&" or "%" in a filter must not cut them short."""
    actor = token_authenticate(raw=hostile_world.token)
    for number in range(51):
        send_task(actor=actor, alias="coder", task=f"deploy #{number} & 100%")
    for number in range(5):
        send_task(actor=actor, alias="coder", task=f"deploy later {number}")

    first = operator.get("/tasks/", {"text": "y #"})
    (older,) = re.findall(r'<a href="(\?[^"]*)">older', first.content.decode())
    second = operator.get("/tasks/" + older.replace("&amp;", "&"))

    assert "page 1 of 2 · 51 tasks" in first.content.decode()
    assert "page 2 of 2 · 51 tasks" in second.content.decode(), older


DASHBOARD_FORMS = [
    ("/dispatch/", {"alias": "coder", "task": "t", "ttl_seconds": "9" * 400}),
    ("/dispatch/", {"alias": "a\x00", "task": "t\x00", "context": "\ud800"}),
    ("/dispatch/", {"alias": HTML[0], "task": HTML[1], "priority": "\x00", "parent_task_id": "\x00"}),
    ("/broadcast/", {"message": "a\x00", "filter_server": "\x00", "filter_status": "\ud800"}),
    ("/tasks/t-unknown/cancel/", {"reason": "\x00"}),
    ("/tasks/%00/retry/", {}),
    ("/tasks/t-unknown/%00/", {}),
]


def test_hostile_dashboard_forms_are_answered_without_a_5xx(operator: Client) -> None:
    for url, form in DASHBOARD_FORMS:
        body = "&".join(f"{key}={encoded(value)}" for key, value in form.items())

        response = operator.post(url, data=body, content_type="application/x-www-form-urlencoded")

        assert response.status_code < 500, (url, form, response.status_code)
        assert_no_leak(response.content, body.encode())
        for payload in HTML:
            assert payload.encode() not in response.content, (url, form)
