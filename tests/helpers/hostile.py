"""Hostile input for the fuzz tests of POST /mcp (tests/hub_mcp/test_hostile_input.py) and the REST
API (tests/hub_api/test_hostile_api.py): strategies, answers' invariants, and a world to aim at."""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass
from typing import Any

from django.test import Client
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from hub_agents.models import Network
from hub_agents.services import token_authenticate, token_create
from hub_tools.tools import TOOLS, Tool
from tests.helpers.calls import ask_operator, report_status, send_message, send_task

MCP = "/mcp"
MODERN = "2026-07-28"
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
BATCH_VERSIONS = (None, "2024-11-05", "2025-03-26")  # no header reads as 2025-03-26
VERSION_META = "io.modelcontextprotocol/protocolVersion"
CAPS_META = "io.modelcontextprotocol/clientCapabilities"
METHODS = (
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "server/discover",
    "notifications/initialized",
    "resources/list",
    "",
    "tools/call ",
    "TOOLS/CALL",
)

# Reproducible in CI: the same examples every run, and no example database left in the tree.
FUZZ = hypothesis_settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

# What must never reach a client: a traceback, a server error page, an exception's class name.
LEAK_MARKERS = (
    "Traceback",
    'File "',
    "Server Error (500)",
    "Internal Server Error",
    "OverflowError",
    "RecursionError",
    "ValueError",
    "TypeError",
    "KeyError",
    "AttributeError",
    "AssertionError",
    "IntegrityError",
    "DataError",
    "OperationalError",
    "ProgrammingError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
    "JSONDecodeError",
    "DoesNotExist",
    "psycopg",
)

SQL = ("'; DROP TABLE hub_tasks_task; --", '" OR 1=1 --')
HTML = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>")


# --- raw JSON text -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Raw:
    """A value written into the body as this exact text: NaN, 1e999, a 5000-digit integer…"""

    text: str


def dumps(value: Any, *, ascii_only: bool = True) -> bytes:
    """JSON bytes for a value that may hold Raw pieces; non-ASCII as escapes or as (maybe invalid) UTF-8."""
    pieces: dict[str, str] = {}

    def placeholder(item: Any) -> str:
        if not isinstance(item, Raw):
            raise TypeError(f"not JSON: {item!r}")
        key = f"\x01raw{len(pieces)}\x01"
        pieces[key] = item.text
        return key

    text = json.dumps(value, default=placeholder, ensure_ascii=ascii_only)
    for key, raw in pieces.items():
        text = text.replace(json.dumps(key, ensure_ascii=ascii_only), raw)
    # A lone surrogate written unescaped becomes bytes that are not UTF-8: invalid input, on purpose.
    return text.encode("utf-8", "surrogatepass")


# --- strategies ----------------------------------------------------------------------------------


HUGE_INTEGERS = (10**400, -(10**400), 2**63, -(2**63) - 1, 2**64 + 1, 10**4000)
RAW_NUMBERS = tuple(
    Raw(text)
    for text in ("NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1e-999", "-0", "1" + "0" * 5000, "0.1e400")
)
HOSTILE_TEXT = (
    "",
    " ",
    "\t\n\u3000",
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "\ud83d\ude00",
    "\u202e\ufeff",
    "x" * 201,
    "x" * 1_001,
    "x" * 10_001,
    "x" * 50_001,
    *SQL,
    *HTML,
    "0",
    "-1",
    "1e999",
    "NaN",
    "null",
    "[]",
    '["a"',
    '["a", 1]',
    "2026-13-45T99:99:99Z",
    "9999-12-31T23:59:59-01:00",
    "0001-01-01T00:00:00+01:00",
    "ntok_" + "A" * 40,
)

json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # nan and inf come out as NaN / Infinity, which json.loads reads
    st.text(max_size=20),
)
json_values = st.recursive(
    json_leaves,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
small_json = st.recursive(
    json_leaves,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=5,
)
nested = st.integers(min_value=1, max_value=60).map(lambda depth: json.loads("[" * depth + "]" * depth))

hostile_values = st.one_of(
    st.sampled_from(HUGE_INTEGERS),
    st.sampled_from(RAW_NUMBERS),
    st.sampled_from(HOSTILE_TEXT),
    st.integers(),
    st.floats(),
    st.text(),
    st.lists(st.text(max_size=10), max_size=3),
    json_values,
    nested,
)


def valid_value(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Something the argument's schema allows (the service may still refuse it: an unknown id)."""
    kind = schema.get("type")
    if kind == "string" and "enum" in schema:
        return st.sampled_from(schema["enum"])
    if kind == "string" and schema.get("format") == "date-time":
        return st.sampled_from(["2026-04-12T10:00:00Z", "2020-01-01T00:00:00+02:00", "2026-04-12"])
    if kind == "string" and schema.get("pattern", "").startswith("^$|"):  # a JSON array of plain strings
        return st.lists(st.text(alphabet="abc-_ 1", max_size=5), max_size=3).map(json.dumps)
    if kind == "string":
        return st.text(min_size=1, max_size=min(schema.get("maxLength", 40), 40))
    if kind == "integer":
        return st.integers(min_value=schema["minimum"], max_value=schema["maximum"])
    if kind == "number":
        return st.floats(min_value=schema["minimum"], max_value=schema["maximum"])
    if kind == "array" and schema["items"].get("type") == "object":  # objects (report_node's agents)
        fields, required = schema["items"]["properties"], schema["items"]["required"]
        record = st.fixed_dictionaries(
            {name: _field_value(fields[name]) for name in required},
            optional={name: _field_value(field) for name, field in fields.items() if name not in required},
        )
        return st.lists(record, max_size=3)
    if kind == "array":
        return st.lists(st.text(min_size=1, max_size=10), max_size=3)
    return json_values


def _field_value(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    return st.booleans() if schema.get("type") == "boolean" else valid_value(schema)


def hostile_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Hostile values, weighted towards the edges of the argument's own type."""
    if schema.get("type") in ("integer", "number"):
        edges = st.sampled_from([*RAW_NUMBERS, schema["minimum"] - 1, schema["maximum"] + 1, -0.0, "5", True])
        beyond_float = st.sampled_from([10**400, -(10**400)])  # integers no float can hold
        return st.one_of(beyond_float, st.sampled_from(HUGE_INTEGERS), edges, st.integers(), st.floats())
    return st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(), hostile_values)


@st.composite
def tool_arguments(draw: st.DrawFn, tool: Tool, known: dict[str, list[Any]]) -> dict[str, Any]:
    """Arguments for one tool: either one hostile argument among good ones (so that it is the one the
    service reads), or each argument omitted, plausible, a known id or hostile, with unknown names too."""
    if draw(st.sampled_from([True, True, False]), label="one bad argument"):
        arguments = {
            name: draw(_plausible(name, tool.input_properties[name], known), label=name) for name in tool.required
        }
        numeric = sorted(
            name for name, schema in tool.input_properties.items() if schema["type"] in ("integer", "number")
        )
        others = sorted(set(tool.params) - set(numeric))
        groups = [group for group in (numeric, numeric, others) if group]
        among = draw(st.sampled_from(groups), label="numeric or not")
        bad = draw(st.sampled_from(among), label="bad argument")
        arguments[bad] = draw(hostile_for(tool.input_properties[bad]), label=bad)
        return no_long_wait(tool.name, arguments)
    arguments = {}
    for name, schema in tool.input_properties.items():
        kinds = ["plausible", "hostile", "omit"]
        if schema["type"] in ("integer", "number"):
            kinds.append("hostile")  # numbers have the most edges: huge, NaN, 1e999, -0
        if name in tool.required:
            kinds.append("plausible")
        kind = draw(st.sampled_from(kinds), label=name)
        if kind == "plausible":
            arguments[name] = draw(_plausible(name, schema, known))
        elif kind == "hostile":
            arguments[name] = draw(hostile_for(schema))
    arguments |= draw(st.dictionaries(st.text(max_size=12), json_values, max_size=2))
    return no_long_wait(tool.name, arguments)


def _plausible(name: str, schema: dict[str, Any], known: dict[str, list[Any]]) -> st.SearchStrategy[Any]:
    """A known id or name where there is one (most of the time), else a value the schema allows."""
    values = [value for value in known.get(name, []) if value in schema.get("enum", [value])]
    if values:
        return st.one_of(st.sampled_from(values), st.sampled_from(values), valid_value(schema))
    return valid_value(schema)


def no_long_wait(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """get_inbox may wait up to a minute for a message: keep the fuzzer from sleeping."""
    wait = arguments.get("wait_seconds")
    if tool == "get_inbox" and _is_number(wait) and 0 < wait <= 60:
        arguments["wait_seconds"] = 0
    return arguments


def _is_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


@st.composite
def envelopes(draw: st.DrawFn) -> dict[str, Any]:
    """A JSON-RPC message with every member possibly missing or of the wrong type."""
    params = st.fixed_dictionaries(
        {},
        optional={
            "name": st.one_of(st.sampled_from([tool.name for tool in TOOLS]), small_json),
            "arguments": st.one_of(st.dictionaries(st.text(max_size=8), small_json, max_size=3), small_json),
            "protocolVersion": st.one_of(st.sampled_from([*HANDSHAKE_VERSIONS, MODERN]), small_json),
            "_meta": st.one_of(
                st.just({VERSION_META: MODERN, CAPS_META: {}}),
                st.dictionaries(st.sampled_from([VERSION_META, CAPS_META, "x"]), small_json, max_size=3),
                small_json,
            ),
        },
    )
    message = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "jsonrpc": st.one_of(st.just("2.0"), st.just("2.0"), small_json),
                "id": st.one_of(st.integers(), st.text(max_size=10), st.sampled_from(HUGE_INTEGERS), small_json),
                "method": st.one_of(st.sampled_from(METHODS), st.sampled_from(METHODS), small_json),
                "params": st.one_of(params, params, small_json),
                "result": small_json,
                "error": small_json,
            },
        )
    )
    message |= draw(st.dictionaries(st.text(max_size=8), small_json, max_size=2))
    return message


headers_strategy = st.fixed_dictionaries(
    {},
    optional={
        "Origin": st.one_of(
            st.sampled_from(["http://localhost", "http://evil.example", "null", "http://[::1", "http://[", "://"]),
            st.text(max_size=20),
        ),
        "Accept": st.sampled_from(["text/event-stream", "application/json", "*/*", "", "\x00"]),
        "Mcp-Method": st.one_of(st.sampled_from(METHODS), st.text(max_size=10)),
        "Mcp-Name": st.one_of(
            st.sampled_from([tool.name for tool in TOOLS]), st.text(max_size=10), st.just("=?base64?%%%?=")
        ),
    },
)


# --- sending and checking ------------------------------------------------------------------------


def send(
    client: Client,
    body: bytes,
    *,
    version: str | None = None,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    content_type: str = "application/json",
    method: str = "POST",
):
    sent: dict[str, str] = {}
    if version is not None:
        sent["MCP-Protocol-Version"] = version
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    sent |= headers or {}
    return client.generic(method, MCP, body, content_type=content_type, headers=sent)


def header_text(value: str) -> str:
    """A header value as clients send text that is not plain ASCII: =?base64?…?=."""
    if value.isascii() and value.isprintable():
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8", "surrogatepass")).decode() + "?="


def assert_no_leak(content: bytes, sent: bytes) -> None:
    """No traceback or exception name in the answer, unless the client sent that very text itself."""
    for marker in LEAK_MARKERS:
        encoded = marker.encode()
        assert encoded not in content or encoded in sent, (marker, content[:2000])


def assert_rpc_answer(reply, sent: bytes) -> list[dict[str, Any]]:
    """Never a 5xx; an empty 202 or JSON-RPC responses whose errors have an integer code and a message."""
    assert reply.status_code < 500, reply.content[:2000]
    assert_no_leak(reply.content, sent)
    if reply.status_code == 202:
        assert reply.content == b""
        return []
    assert reply["Content-Type"].startswith("application/json"), reply["Content-Type"]
    body = json.loads(reply.content)
    messages = body if isinstance(body, list) else [body]
    assert messages, body
    for message in messages:
        assert isinstance(message, dict), body
        assert message.get("jsonrpc") == "2.0", message
        assert "id" in message, message
        assert ("error" in message) != ("result" in message), message
        if "error" in message:
            error = message["error"]
            assert isinstance(error["code"], int) and not isinstance(error["code"], bool), error
            assert isinstance(error["message"], str) and error["message"].strip(), error
            assert reply.status_code in (200, 400, 401, 403, 404, 405, 413), reply.status_code
        else:
            assert isinstance(message["result"], dict), message
            if "content" in message["result"]:
                assert_tool_outcome(message["result"])
    return messages


def assert_tool_outcome(result: dict[str, Any]) -> dict[str, Any]:
    """A tools/call result: one text block holding the outcome; a refusal is ok: false with an error."""
    (block,) = result["content"]
    assert block["type"] == "text"
    outcome = json.loads(block["text"])
    assert isinstance(outcome, dict) and isinstance(outcome.get("ok"), bool), outcome
    assert result["isError"] is (not outcome["ok"]), result
    if "structuredContent" in result:
        assert result["structuredContent"] == outcome
    if not outcome["ok"]:
        assert isinstance(outcome.get("error"), str) and outcome["error"].strip(), outcome
        assert isinstance(outcome.get("message"), str) and outcome["message"].strip(), outcome
        assert isinstance(outcome.get("code"), str) and outcome["code"], outcome
    return outcome


def tools_call(
    client: Client, token: str, name: Any, arguments: Any, *, version: str | None, request_id: Any = 1
) -> tuple[bytes, Any]:
    """A well-formed tools/call in either era; returns the body sent and the reply."""
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    headers: dict[str, str] = {}
    if version == MODERN:
        params["_meta"] = {VERSION_META: MODERN, CAPS_META: {}}
        headers["Mcp-Method"] = "tools/call"
        if isinstance(name, str):
            headers["Mcp-Name"] = header_text(name)
    body = dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
    return body, send(client, body, version=version, token=token, headers=headers)


def tool_outcome(client: Client, token: str, name: str, arguments: Any, *, version: str | None) -> dict[str, Any]:
    body, reply = tools_call(client, token, name, arguments, version=version)
    (message,) = assert_rpc_answer(reply, body)
    assert "result" in message, message
    assert reply.status_code == 200
    return assert_tool_outcome(message["result"])


# --- fixtures ------------------------------------------------------------------------------------


@dataclass
class World:
    token: str
    network: Network
    known: dict[str, list[Any]]
    task_id: str
    message_id: str
    open_task_id: str  # an open task in the pool, which coder's skills cover (claim_task)
    question_id: str  # coder's open question about task_id (answer_question)


def make_world(network: Network, other_network: Network) -> World:
    """A member token, an agent that reported (with a skill), a task, a message, an open task and a
    question: ids for the fuzzer to aim at."""
    _, raw = token_create(network=network, role="member", name="fuzz")
    actor = token_authenticate(raw=raw)
    report_status(actor=actor, resume_id="r-coder", alias="coder", status="idle", server="s1", skills=["python"])
    task_id = send_task(actor=actor, alias="coder", task="fix the bug", from_session="lead")["task_id"]
    message_id = send_message(actor=actor, alias="coder", message="hello", from_session="lead")["message_id"]
    open_task_id = send_task(
        actor=actor, alias="pool", task="port the parser", from_session="lead", required_skills=["python"]
    )["task_id"]
    question_id = ask_operator(actor=actor, task_id=task_id, question="which parser?")["question_id"]
    known: dict[str, list[Any]] = {
        "alias": ["coder", "lead", "pool"],
        "new_alias": ["reviewer", "coder"],
        "task_id": [task_id, open_task_id, "t-unknown"],
        "task": [task_id, "fix the bug"],
        "message_id": [message_id, task_id],
        "in_reply_to": [task_id, message_id],
        "parent_task_id": [task_id],
        "network_id": [network.pk, other_network.pk],
        "filter_server": ["s1"],
        "status": ["idle", "working"],
        "skill": ["python"],
        "skills": [["python"]],
        "required_skills": [["python"]],
        "question_id": [question_id, "q-unknown"],
    }
    return World(
        token=raw,
        network=network,
        known=known,
        task_id=task_id,
        message_id=message_id,
        open_task_id=open_task_id,
        question_id=question_id,
    )


def _truncations(draw: st.DrawFn) -> bytes:
    whole = dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_all_status"}})
    return whole[: draw(st.integers(min_value=0, max_value=len(whole) - 1))]


@st.composite
def raw_bodies(draw: st.DrawFn) -> bytes:
    """Bytes that are not (quite) a JSON-RPC message: cut short, not UTF-8, other encodings, noise."""
    valid = dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    kind = draw(st.sampled_from(["binary", "truncated", "bad-utf8", "encoded", "prefixed", "nested"]))
    if kind == "binary":
        return draw(st.binary(max_size=200))
    if kind == "truncated":
        return _truncations(draw)
    if kind == "bad-utf8":
        at = draw(st.integers(min_value=0, max_value=len(valid)))
        junk = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80", b"\x00"]))
        return valid[:at] + junk + valid[at:]
    if kind == "encoded":
        return valid.decode().encode(draw(st.sampled_from(["utf-16", "utf-16-be", "utf-32", "latin-1", "cp500"])))
    if kind == "prefixed":
        return draw(st.sampled_from([b"\xef\xbb\xbf", b"\x00", b" \t\r\n", b"//", b")]}'\n"])) + valid
    depth = draw(st.integers(min_value=1, max_value=3000))
    return draw(st.sampled_from([b"[", b'{"a":'])) * depth
