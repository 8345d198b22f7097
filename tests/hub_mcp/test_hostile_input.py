"""Hostile input to POST /mcp: whatever arrives, the answer is a clear 4xx or a JSON-RPC answer, never a 5xx.

Hypothesis sends arbitrary JSON, malformed JSON-RPC envelopes, `tools/call` for every tool with
arguments both plausible and hostile, and raw bytes, in both protocol eras. Deterministic tests
pin the edges a random search rarely hits: absurd nesting, oversized bodies, huge numbers in
every numeric argument, NUL and lone surrogates in every text argument.

The strategies and checks live in tests/helpers/hostile.py, shared with tests/hub_api/test_hostile_api.py.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

import pytest
from django.test import Client
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from hub_tools.tools import TOOLS, TOOLS_BY_NAME, Tool
from tests.helpers.hostile import (
    BATCH_VERSIONS,
    CAPS_META,
    FUZZ,
    HANDSHAKE_VERSIONS,
    MODERN,
    SQL,
    VERSION_META,
    Raw,
    World,
    assert_rpc_answer,
    assert_tool_outcome,
    dumps,
    envelopes,
    headers_strategy,
    json_values,
    raw_bodies,
    send,
    tool_arguments,
    tool_outcome,
    tools_call,
)

# /mcp and the inbox endpoint run their database work through hub_core.waiting's pool: in these rolled-back
# tests it runs on the test's own thread and connection (tests/plugins/pool.py), so it sees the test's rows.
pytestmark = pytest.mark.django_db


# --- properties ----------------------------------------------------------------------------------


versions = st.sampled_from([None, *HANDSHAKE_VERSIONS, MODERN, "1999-01-01", ""])


@FUZZ
@given(body=json_values, version=versions, authenticated=st.booleans(), ascii_only=st.booleans())
def test_any_json_value_as_the_body_is_answered_without_a_5xx(
    client: Client, hostile_world: World, body: Any, version: str | None, authenticated: bool, ascii_only: bool
) -> None:
    raw = dumps(body, ascii_only=ascii_only)
    reply = send(client, raw, version=version, token=hostile_world.token if authenticated else None)

    assert_rpc_answer(reply, raw)


@FUZZ
@given(message=envelopes(), version=versions, headers=headers_strategy, authenticated=st.booleans())
def test_malformed_json_rpc_envelopes_get_a_json_rpc_error_never_a_5xx(
    client: Client,
    hostile_world: World,
    message: dict[str, Any],
    version: str | None,
    headers: dict,
    authenticated: bool,
) -> None:
    raw = dumps(message)
    reply = send(client, raw, version=version, token=hostile_world.token if authenticated else None, headers=headers)

    messages = assert_rpc_answer(reply, raw)
    if message.get("jsonrpc") != "2.0":  # not JSON-RPC 2.0: refused, whatever else the message holds
        assert reply.status_code >= 400 or any("error" in answer for answer in messages), reply.content


@hypothesis_settings(FUZZ, max_examples=60)
@given(messages=st.lists(envelopes(), min_size=1, max_size=3), version=st.sampled_from(BATCH_VERSIONS))
def test_batches_of_malformed_messages_are_answered_message_by_message(
    client: Client, hostile_world: World, messages: list[dict[str, Any]], version: str | None
) -> None:
    raw = dumps(messages)
    reply = send(client, raw, version=version, token=hostile_world.token)

    assert_rpc_answer(reply, raw)


@pytest.mark.parametrize("tool", TOOLS, ids=[tool.name for tool in TOOLS])
@hypothesis_settings(FUZZ, max_examples=40)
@given(data=st.data(), version=st.sampled_from([None, *HANDSHAKE_VERSIONS, MODERN]))
def test_tools_call_with_hostile_arguments_answers_a_tool_result_never_a_fault(
    client: Client, hostile_world: World, data: st.DataObject, tool: Tool, version: str | None
) -> None:
    arguments = data.draw(tool_arguments(tool, hostile_world.known), label="arguments")
    ascii_only = data.draw(st.booleans(), label="ascii_only")

    params = {"name": tool.name, "arguments": arguments}
    headers = {}
    if version == MODERN:
        params["_meta"] = {VERSION_META: MODERN, CAPS_META: {}}
        headers = {"Mcp-Method": "tools/call", "Mcp-Name": tool.name}
    raw = dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}, ascii_only=ascii_only)
    reply = send(client, raw, version=version, token=hostile_world.token, headers=headers)

    messages = assert_rpc_answer(reply, raw)
    if reply.status_code == 400 and messages and messages[0]["error"]["code"] == -32700:
        return  # unescaped lone surrogates: the body is not UTF-8, a parse error is the right answer
    (message,) = messages
    assert reply.status_code == 200 and "result" in message, reply.content[:2000]
    outcome = assert_tool_outcome(message["result"])
    unknown = set(arguments) - set(tool.params)
    if unknown:
        assert outcome["ok"] is False and outcome["code"] == "invalid_argument", outcome


@FUZZ
@given(name=json_values, arguments=json_values, version=st.sampled_from([None, "2025-06-18", MODERN]))
def test_tools_call_with_a_wrong_typed_name_or_arguments_is_an_invalid_params_error(
    client: Client, hostile_world: World, name: Any, arguments: Any, version: str | None
) -> None:
    raw, reply = tools_call(client, hostile_world.token, name, arguments, version=version)

    (message,) = assert_rpc_answer(reply, raw)
    if isinstance(name, str) and name in TOOLS_BY_NAME and (arguments is None or isinstance(arguments, dict)):
        assert "result" in message, message
    elif version == MODERN:  # a name the Mcp-Name header cannot mirror is a header mismatch first
        assert message["error"]["code"] in (-32602, -32020), message
    else:
        assert message["error"]["code"] == -32602, message


@FUZZ
@given(
    body=raw_bodies(),
    version=versions,
    content_type=st.sampled_from(["application/json", "text/plain", "", "application/json; charset=utf-16"]),
)
def test_raw_bytes_that_are_not_json_get_a_parse_error(
    client: Client, hostile_world: World, body: bytes, version: str | None, content_type: str
) -> None:
    reply = send(client, body, version=version, token=hostile_world.token, content_type=content_type)

    assert_rpc_answer(reply, body)


@FUZZ
@given(method=st.sampled_from(["GET", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]), body=st.binary(max_size=50))
def test_other_http_methods_are_405_in_json(client: Client, hostile_world: World, method: str, body: bytes) -> None:
    reply = send(client, body, token=hostile_world.token, method=method)

    assert reply.status_code == 405, reply.content
    assert reply["Allow"] == "POST"
    if method != "HEAD":
        assert_rpc_answer(reply, body)


# --- deterministic edges -------------------------------------------------------------------------


DEEP = b"[" * 10_000 + b"]" * 10_000
DEEP_BODIES = {
    "array": DEEP,
    "object": b'{"a":' * 10_000 + b"1" + b"}" * 10_000,
    "in-id": b'{"jsonrpc": "2.0", "method": "ping", "id": ' + DEEP + b"}",
    "in-arguments": b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "send_task", '
    b'"arguments": {"alias": "coder", "task": "t", "priority": ' + DEEP + b"}}}",
}


def test_json_nested_ten_thousand_deep_is_a_parse_error(client: Client, hostile_world: World) -> None:
    for version in (None, "2025-06-18", MODERN):
        for where, body in DEEP_BODIES.items():
            reply = send(client, body, version=version, token=hostile_world.token)

            (message,) = assert_rpc_answer(reply, body)
            assert (reply.status_code, message["error"]["code"]) == (400, -32700), (version, where, message)


def _depths() -> Iterable[int]:
    """Every nesting depth around the interpreter's recursion limit, where parsing just succeeds."""
    limit = sys.getrecursionlimit()
    return range(limit - 120, limit + 5)


@pytest.mark.parametrize("version", [None, MODERN])
def test_arguments_nested_just_under_the_parsers_limit_never_crash_the_answer(
    client: Client, hostile_world: World, version: str | None
) -> None:
    """A value nested as deep as the parser allows must not break the code that echoes it back."""
    client = Client(raise_request_exception=False)  # collect every failing depth, not just the first
    failures = []
    for depth in _depths():
        value = Raw("[" * depth + "]" * depth)
        for name, arguments in [
            ("send_task", {"alias": "coder", "task": "t", "priority": value}),  # echoed as repr(value)
            (value, {}),  # an unknown tool name, echoed as repr(name)
        ]:
            raw, reply = tools_call(client, hostile_world.token, name, arguments, version=version)
            if reply.status_code >= 500 or not reply["Content-Type"].startswith("application/json"):
                failures.append((depth, "name" if isinstance(name, Raw) else "priority", reply.status_code))
                continue
            assert_rpc_answer(reply, raw)
    assert not failures, f"5xx for nesting depths (depth, where, status): {failures}"


def test_a_body_over_the_size_limit_is_413_and_the_limit_itself_is_accepted(
    client: Client, hostile_world: World, settings
) -> None:
    limit = settings.COMMHUB_MAX_REQUEST_BYTES
    shell = dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": ""}})
    at_limit = shell.replace(b'"pad": ""', b'"pad": "' + b"x" * (limit - len(shell)) + b'"')
    over_limit = at_limit.replace(b'"x', b'"xx', 1)

    assert len(at_limit) == limit and len(over_limit) == limit + 1
    assert send(client, at_limit, version="2025-11-25", token=hostile_world.token).status_code == 200
    reply = send(client, over_limit, version="2025-11-25", token=hostile_world.token)
    (message,) = assert_rpc_answer(reply, over_limit)
    assert reply.status_code == 413
    assert message["error"]["code"] == -32600


@pytest.mark.parametrize("version", [None, MODERN])
def test_a_body_far_over_a_lowered_limit_is_413(
    client: Client, hostile_world: World, settings, version: str | None
) -> None:
    settings.COMMHUB_MAX_REQUEST_BYTES = 1024
    body = dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * 5000}})

    reply = send(client, body, version=version, token=hostile_world.token)

    (message,) = assert_rpc_answer(reply, body)
    assert reply.status_code == 413 and message["error"]["code"] == -32600


OUT_OF_RANGE = {
    "10**400": 10**400,
    "-10**400": -(10**400),
    "1e999": Raw("1e999"),
    "-Infinity": Raw("-Infinity"),
    "NaN": Raw("NaN"),
    "2**64": 2**64,
    "true": True,
    "'5'": "5",
}
BAD_TEXT = {"nul": "a\x00b", "surrogate": "\ud800", "object": {"nested": ["x"]}, "huge": 10**400}


def base_arguments(hostile_world: World) -> dict[str, dict[str, Any]]:
    """For every tool, arguments it accepts: one bad argument on top of them must be what is refused."""
    return {
        "report_status": {"resume_id": "r-coder", "alias": "coder", "status": "idle"},
        "report_completion": {"alias": "coder", "task": "some other work", "result": "done"},
        "get_inbox": {"alias": "coder"},
        "ack_inbox": {"alias": "coder", "message_id": hostile_world.message_id},
        "send_task": {"alias": "coder", "task": "another task"},
        "send_message": {"alias": "coder", "message": "hi"},
        "send_reply": {"alias": "lead", "text": "noted"},
        "send_ack": {"task_id": hostile_world.task_id},
        "retry_task": {"task_id": hostile_world.task_id},
        "cancel_task": {"task_id": hostile_world.task_id},
        "reassign_task": {"task_id": hostile_world.task_id, "new_alias": "reviewer"},
        "get_task": {"task_id": hostile_world.task_id},
        "list_tasks": {},
        "get_all_status": {},
        "get_session_status": {"alias": "coder"},
        "get_completions": {},
        "broadcast": {"message": "everyone"},
        "find_agents": {"skill": "python"},
        "list_open_tasks": {"alias": "coder"},
        "claim_task": {"task_id": hostile_world.open_task_id, "alias": "coder"},
        "ask_operator": {"task_id": hostile_world.task_id, "question": "which parser?"},
        "answer_question": {"question_id": hostile_world.question_id, "answer": "the new one"},
        "list_questions": {},
        "list_approvals": {},
        "get_thread": {"task_id": hostile_world.task_id},
        "search": {"query": "parser"},
        "decide_approval": {"approval_id": "apr_0000000000000000", "decision": "approve"},
        # Channels (an id no channel has: arguments are refused before it is looked up).
        "channel_create": {"name": "fuzz-room", "alias": "coder"},
        "channel_list": {},
        "channel_join": {"channel_id": "chn_0000000000000000", "alias": "coder"},
        "channel_leave": {"channel_id": "chn_0000000000000000", "alias": "coder"},
        "channel_info": {"channel_id": "chn_0000000000000000"},
        "channel_configure": {"channel_id": "chn_0000000000000000", "alias": "coder"},
        "channel_post": {"channel_id": "chn_0000000000000000", "alias": "coder", "content": "hi"},
        "channel_read": {"channel_id": "chn_0000000000000000", "alias": "coder"},
        # Nodes.
        "report_node": {"node_id": "box-1"},
        "list_nodes": {},
        # Commands to nodes (a command id no command has: arguments are refused before it is looked up).
        "node_command": {"node_id": "box-1", "kind": "pause"},
        "node_command_ack": {"command_id": "cmd_0000000000000000", "ok": True},
        "node_commands": {},
        # Schedules (an id no schedule has: arguments are refused before it is looked up).
        "schedule_create": {"name": "fuzz-nightly", "alias": "coder", "task": "review", "cron": "0 2 * * *"},
        "schedule_list": {},
        "schedule_pause": {"schedule_id": "sch_0000000000000000"},
        "schedule_resume": {"schedule_id": "sch_0000000000000000"},
        "schedule_run_now": {"schedule_id": "sch_0000000000000000"},
        "schedule_delete": {"schedule_id": "sch_0000000000000000"},
        # Concurrency caps (an id no cap has: arguments are refused before it is looked up).
        "cap_set": {"scope": "runtime", "value": "codex", "limit": 2},
        "cap_list": {},
        "cap_delete": {"cap_id": "00000000-0000-0000-0000-000000000000"},
        # Budgets (an id no budget has).
        "budget_set": {"period": "day", "limit_usd": 2.5},
        "budget_list": {},
        "budget_delete": {"budget_id": "00000000-0000-0000-0000-000000000000"},
    }


def test_every_tool_has_base_arguments_that_it_accepts(client: Client, hostile_world: World) -> None:
    assert set(base_arguments(hostile_world)) == set(TOOLS_BY_NAME)
    for tool in (
        *("list_tasks", "get_task", "get_session_status", "get_completions", "get_all_status", "get_inbox"),
        *("find_agents", "list_open_tasks", "claim_task", "list_questions", "ask_operator", "answer_question"),
        "list_approvals",
        "get_thread",
        *("channel_create", "channel_list"),
        "search",
        *("report_node", "list_nodes"),
    ):
        assert (
            tool_outcome(client, hostile_world.token, tool, base_arguments(hostile_world)[tool], version=None)["ok"]
            is True
        )


def refusals_naming(
    client: Client, hostile_world: World, tool: str, cases: dict[str, Any], expected_field: dict[str, str], version: str
) -> list[tuple[str, str, object]]:
    """Each (argument, bad value) on top of the tool's base arguments; the ones not refused by name."""
    client = Client(raise_request_exception=False)  # collect every failing case, not just the first
    wrong: list[tuple[str, str, object]] = []
    for argument, field in expected_field.items():
        for label, value in cases.items():
            is_list = TOOLS_BY_NAME[tool].input_properties[argument]["type"] == "array"
            arguments = {**base_arguments(hostile_world)[tool], argument: [value] if is_list else value}
            body, reply = tools_call(client, hostile_world.token, tool, arguments, version=version)
            if reply.status_code >= 500:
                wrong.append((argument, label, f"HTTP {reply.status_code}"))
                continue
            (message,) = assert_rpc_answer(reply, body)
            outcome = assert_tool_outcome(message["result"])
            if outcome["ok"] or outcome["code"] != "invalid_argument" or outcome.get("field") != field:
                wrong.append((argument, label, outcome))
    return wrong


NUMERIC_TOOLS = [
    tool.name for tool in TOOLS if any(p["type"] in ("integer", "number") for p in tool.input_properties.values())
]


@pytest.mark.parametrize("tool", NUMERIC_TOOLS)
def test_a_number_out_of_range_or_of_the_wrong_type_is_refused_naming_the_argument(
    client: Client, hostile_world: World, tool: str
) -> None:
    numeric = {
        name: name for name, p in TOOLS_BY_NAME[tool].input_properties.items() if p["type"] in ("integer", "number")
    }

    wrong = refusals_naming(client, hostile_world, tool, OUT_OF_RANGE, numeric, version="2025-11-25")

    assert not wrong, wrong


def test_bad_text_in_any_text_argument_of_any_tool_is_refused_naming_the_argument(
    client: Client, hostile_world: World
) -> None:
    wrong = []
    for tool in TOOLS:
        texts = {
            name: f"{name}[0]" if p["type"] == "array" else name
            for name, p in tool.input_properties.items()
            if p["type"] in ("string", "array")
        }
        # Half the bad values in each era: both reach the same tool code, each era its own transport.
        for version, cases in (("2025-06-18", ("nul", "object")), (MODERN, ("surrogate", "huge"))):
            bad = {label: BAD_TEXT[label] for label in cases}
            wrong += [
                (tool.name, version, *case)
                for case in refusals_naming(client, hostile_world, tool.name, bad, texts, version=version)
            ]

    assert not wrong, wrong


@pytest.mark.parametrize("version", ["2025-03-26", MODERN])
def test_unknown_argument_names_are_refused_even_when_hostile(
    client: Client, hostile_world: World, version: str
) -> None:
    for name in ["actor", "\x00", "\ud800", "<script>alert(1)</script>", "__class__", "x" * 10_000]:
        outcome = tool_outcome(client, hostile_world.token, "list_tasks", {name: 1}, version=version)

        assert outcome["ok"] is False and outcome["code"] == "invalid_argument", outcome


def test_the_fixture_world_is_intact_after_hostile_writes(client: Client, hostile_world: World) -> None:
    """SQL in arguments is data: after it the task is still there and readable."""
    for payload in SQL:
        tool_outcome(client, hostile_world.token, "send_task", {"alias": payload, "task": payload}, version=None)

    outcome = tool_outcome(client, hostile_world.token, "get_task", {"task_id": hostile_world.task_id}, version=None)
    assert outcome["ok"] is True and outcome["task"]["content"] == "fix the bug"
    listed = tool_outcome(client, hostile_world.token, "list_tasks", {"alias": SQL[0]}, version=None)
    assert [task["content"] for task in listed["tasks"]] == [SQL[0]]
