"""POST /mcp over raw HTTP: status codes, headers, both protocol eras, parsing, auth, origin, tools.

Everything goes through Django's test client, so the real URL conf and middleware answer.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import mcp_types
import pytest

from hub_agents.services import token_create, token_revoke
from hub_tools.tools import CONTRACT_TOOLS
from tests.helpers.contract import READ_ONLY_EXTENSIONS, assert_contract_first
from tests.helpers.mcp import LATEST, MCP, call, post, request, rpc

# /mcp and the inbox endpoint run their database work through hub_core.waiting's pool: in these rolled-back
# tests it runs on the test's own thread and connection (tests/plugins/pool.py), so it sees the test's rows.
pytestmark = pytest.mark.django_db

MODERN = "2026-07-28"
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", LATEST)
ALL_VERSIONS = [*HANDSHAKE_VERSIONS, MODERN]
VERSION_META = "io.modelcontextprotocol/protocolVersion"
CAPS_META = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"

READ_ONLY_TOOLS = {
    "get_task", "list_tasks", "get_all_status", "get_session_status", "get_completions", "get_inbox",
    *READ_ONLY_EXTENSIONS,
}  # fmt: skip


# --- helpers -------------------------------------------------------------------------------------


PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def notification(method: str) -> dict:
    return {"jsonrpc": "2.0", "method": method}


def envelope(params: dict | None = None, **meta: Any) -> dict:
    return {**(params or {}), "_meta": {VERSION_META: MODERN, CAPS_META: {}, **meta}}


def modern(client, method: str, params: dict | None = None, *, token=None, headers=None, id: Any = 1):
    """A stateless-era request: envelope in params._meta, routing headers mirroring the body."""
    sent = {"Mcp-Method": method}
    if method == "tools/call":
        sent["Mcp-Name"] = (params or {})["name"]
    sent |= headers or {}
    return rpc(client, method, envelope(params), id=id, version=MODERN, token=token, headers=sent)


def rpc_error(reply, status: int, code: int) -> dict:
    """Assert the reply is a JSON-RPC error with this HTTP status and code; return the body."""
    assert reply.status_code == status, reply.content
    assert reply["Content-Type"].startswith("application/json")
    body = reply.json()
    assert body["jsonrpc"] == "2.0"
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body


def result_of(reply) -> dict:
    assert reply.status_code == 200, reply.content
    assert reply["Content-Type"].startswith("application/json")
    body = reply.json()
    assert "error" not in body, body
    return body["result"]


def list_tools(client, version: str | None = LATEST) -> list[dict]:
    return result_of(rpc(client, "tools/list", version=version))["tools"]


def walk(value: Any):
    """Every dict key anywhere inside a JSON value."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key
            yield from walk(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from walk(inner)


@pytest.fixture
def member_token(network) -> str:
    return token_create(network=network, role="member", name="member")[1]


@pytest.fixture
def viewer_token(network) -> str:
    return token_create(network=network, role="viewer", name="viewer")[1]


@pytest.fixture
def outsider_token(other_network) -> str:
    return token_create(network=other_network, role="member", name="outsider")[1]


# --- handshake era -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_initialize_answers_the_clients_supported_version(client, db, version):
    result = result_of(rpc(client, "initialize", {"protocolVersion": version, "capabilities": {}}))
    assert result["protocolVersion"] == version
    assert result["serverInfo"]["name"] == "commhub"
    assert "version" in result["serverInfo"]
    assert "tools" in result["capabilities"]


@pytest.mark.parametrize("asked", [MODERN, "garbage", "1999-01-01", 20250618])
def test_initialize_answers_latest_handshake_version_for_anything_else(client, db, asked):
    result = result_of(rpc(client, "initialize", {"protocolVersion": asked, "capabilities": {}}))
    assert result["protocolVersion"] == LATEST


def test_initialized_notification_is_accepted_with_an_empty_202(client, db):
    reply = post(client, notification("notifications/initialized"), version=LATEST)
    assert reply.status_code == 202
    assert reply.content == b""


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 9, "result": {}},
        {"jsonrpc": "2.0", "id": "s-1", "error": {"code": -1, "message": "declined"}},
    ],
)
def test_a_response_posted_by_the_client_is_accepted_with_202(client, db, message):
    reply = post(client, message, version=LATEST)
    assert reply.status_code == 202
    assert reply.content == b""


def test_ping_answers_an_empty_object_with_the_request_id(client, db):
    reply = rpc(client, "ping", id="ping-7", version=LATEST)
    assert reply.status_code == 200
    assert reply.json() == {"jsonrpc": "2.0", "id": "ping-7", "result": {}}


def test_unsupported_version_header_is_400_listing_the_supported_versions(client, db):
    body = rpc_error(rpc(client, "ping", version="1999-01-01"), 400, -32022)
    assert set(body["error"]["data"]["supported"]) == set(ALL_VERSIONS)


@pytest.mark.parametrize("version", [None, "2025-03-26", "2024-11-05"])
def test_batches_are_answered_in_versions_that_allow_them(client, db, version):
    batch = [request("ping", id=1), notification("notifications/initialized"), request("tools/list", id=2)]
    reply = post(client, batch, version=version)
    assert reply.status_code == 200
    replies = reply.json()
    assert isinstance(replies, list)
    assert [r["id"] for r in replies] == [1, 2]
    assert replies[0]["result"] == {}
    assert_contract_first([tool["name"] for tool in replies[1]["result"]["tools"]])


def test_an_all_notification_batch_is_202(client, db):
    reply = post(client, [notification("notifications/initialized"), notification("notifications/cancelled")])
    assert reply.status_code == 202
    assert reply.content == b""


@pytest.mark.parametrize("version", ["2025-06-18", LATEST])
def test_batches_are_refused_in_versions_without_them(client, db, version):
    rpc_error(post(client, [request("ping")], version=version), 400, -32600)


@pytest.mark.parametrize("version", [None, "2025-03-26"])
def test_an_empty_batch_is_an_invalid_request(client, db, version):
    rpc_error(post(client, [], version=version), 400, -32600)


def test_unknown_method_in_handshake_era_is_method_not_found_in_a_200(client, db):
    body = rpc_error(rpc(client, "resources/list", id=4, version=LATEST), 200, -32601)
    assert body["id"] == 4


# --- stateless era (2026-07-28) ------------------------------------------------------------------


def test_server_discover_describes_the_server(client, db):
    result = result_of(modern(client, "server/discover"))
    assert result["supportedVersions"] == [MODERN]
    assert "tools" in result["capabilities"]
    assert result["resultType"] == "complete"
    assert isinstance(result["ttlMs"], int)
    assert isinstance(result["cacheScope"], str)
    assert result["_meta"][SERVER_INFO_META]["name"] == "commhub"


def test_modern_envelope_may_carry_client_info(client, db):
    params = {"_meta": {VERSION_META: MODERN, CAPS_META: {}, "io.modelcontextprotocol/clientInfo": {"name": "t"}}}
    reply = rpc(client, "server/discover", params, version=MODERN, headers={"Mcp-Method": "server/discover"})
    assert result_of(reply)["supportedVersions"] == [MODERN]


def test_modern_tools_list_and_call_are_complete_results(client, member_token):
    listed = result_of(modern(client, "tools/list"))
    assert_contract_first([tool["name"] for tool in listed["tools"]])
    assert listed["resultType"] == "complete"
    called = result_of(modern(client, "tools/call", {"name": "list_tasks", "arguments": {}}, token=member_token))
    assert called["resultType"] == "complete"
    assert called["isError"] is False
    assert called["structuredContent"]["ok"] is True


@pytest.mark.parametrize(
    "params",
    [
        pytest.param({}, id="no-meta"),
        pytest.param({"_meta": "2026-07-28"}, id="meta-not-object"),
        pytest.param({"_meta": {CAPS_META: {}}}, id="no-version"),
        pytest.param({"_meta": {VERSION_META: MODERN}}, id="no-capabilities"),
    ],
)
def test_modern_request_without_its_envelope_is_invalid_params(client, db, params):
    reply = rpc(client, "tools/list", params, version=MODERN, headers={"Mcp-Method": "tools/list"})
    rpc_error(reply, 400, -32602)


def test_modern_request_without_params_is_invalid_params(client, db):
    reply = rpc(client, "tools/list", version=MODERN, headers={"Mcp-Method": "tools/list"})
    rpc_error(reply, 400, -32602)


@pytest.mark.parametrize(
    ("method", "params", "headers"),
    [
        pytest.param("tools/list", None, {"Mcp-Method": "server/discover"}, id="method-header-differs"),
        pytest.param("tools/list", None, {"Mcp-Method": ""}, id="method-header-empty"),
        pytest.param("tools/call", {"name": "list_tasks"}, {"Mcp-Name": "get_task"}, id="name-header-differs"),
        pytest.param(
            "tools/call", {"name": "list_tasks"}, {"Mcp-Name": "=?base64?Z2V0X3Rhc2s=?="}, id="b64-name-differs"
        ),
        pytest.param("tools/call", {"name": "list_tasks"}, {"Mcp-Name": "=?base64?!!!?="}, id="b64-name-garbled"),
    ],
)
def test_modern_routing_headers_must_match_the_body(client, member_token, method, params, headers):
    rpc_error(modern(client, method, params, token=member_token, headers=headers), 400, -32020)


def test_modern_request_missing_the_method_header_is_a_mismatch(client, db):
    reply = rpc(client, "tools/list", envelope(), version=MODERN)
    rpc_error(reply, 400, -32020)


def test_modern_tools_call_missing_the_name_header_is_a_mismatch(client, member_token):
    params = envelope({"name": "list_tasks", "arguments": {}})
    reply = rpc(client, "tools/call", params, version=MODERN, token=member_token, headers={"Mcp-Method": "tools/call"})
    rpc_error(reply, 400, -32020)


def test_modern_envelope_version_must_match_the_header(client, db):
    params = {"_meta": {VERSION_META: LATEST, CAPS_META: {}}}
    reply = rpc(client, "tools/list", params, version=MODERN, headers={"Mcp-Method": "tools/list"})
    rpc_error(reply, 400, -32020)


def test_modern_name_header_may_be_base64_wrapped(client, member_token):
    wrapped = "=?base64?" + base64.b64encode(b"list_tasks").decode() + "?="
    params = {"name": "list_tasks", "arguments": {}}
    reply = modern(client, "tools/call", params, token=member_token, headers={"Mcp-Name": wrapped})
    assert result_of(reply)["structuredContent"]["ok"] is True


@pytest.mark.parametrize("method", ["ping", "initialize", "resources/list"])
def test_modern_unknown_method_is_404_method_not_found(client, db, method):
    body = rpc_error(modern(client, method, id=11), 404, -32601)
    assert body["id"] == 11


def test_modern_batch_is_an_invalid_request(client, db):
    batch = [request("tools/list", envelope())]
    rpc_error(post(client, batch, version=MODERN, headers={"Mcp-Method": "tools/list"}), 400, -32600)


def test_modern_notification_is_202(client, db):
    reply = post(client, notification("notifications/cancelled"), version=MODERN)
    assert reply.status_code == 202
    assert reply.content == b""


# --- HTTP surface, both eras ---------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["get", "delete", "put"])
@pytest.mark.parametrize("path", [MCP, MCP + "/"])
def test_only_post_is_allowed(client, db, verb, path):
    reply = getattr(client, verb)(path)
    assert reply.status_code == 405
    assert reply["Allow"] == "POST"
    assert reply["Content-Type"].startswith("application/json")


@pytest.mark.parametrize("version", [LATEST, MODERN])
def test_trailing_slash_answers_like_mcp(client, db, version):
    if version == MODERN:
        body = request("tools/list", envelope())
        reply = post(client, body, version=version, headers={"Mcp-Method": "tools/list"}, path="/mcp/")
    else:
        reply = post(client, request("tools/list"), version=version, path="/mcp/")
    assert reply.status_code == 200
    assert_contract_first([tool["name"] for tool in reply.json()["result"]["tools"]])


def test_replies_are_json_and_never_issue_a_session_id(client, member_token):
    replies = [
        rpc(client, "initialize", {"protocolVersion": LATEST, "capabilities": {}}),
        rpc(client, "ping", version=LATEST),
        rpc(client, "nope", version=LATEST),
        modern(client, "server/discover"),
        modern(client, "tools/call", {"name": "list_tasks", "arguments": {}}, token=member_token),
        post(client, b"{", version=LATEST),
        rpc(client, "tools/call", {"name": "list_tasks"}, version=LATEST),
    ]
    assert [r.status_code for r in replies] == [200, 200, 200, 200, 200, 400, 401]
    for reply in replies:
        assert reply["Content-Type"].startswith("application/json")
        assert "Mcp-Session-Id" not in reply
        reply.json()


@pytest.mark.parametrize("version", [None, LATEST])
def test_a_client_session_id_header_is_not_rejected(client, db, version):
    reply = rpc(client, "ping", version=version, headers={"Mcp-Session-Id": "c0ffee-not-ours"})
    assert result_of(reply) == {}
    assert "Mcp-Session-Id" not in reply


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"{", id="truncated"),
        pytest.param(b"not json", id="words"),
        pytest.param(b"", id="empty"),
        pytest.param(b'{"jsonrpc": "2.0", "id": 1, "method": "ping",}', id="trailing-comma"),
        pytest.param(b'{"jsonrpc": "2.0", "id": 1, "method": "p\xffing"}', id="invalid-utf8"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, id="deeply-nested"),
    ],
)
@pytest.mark.parametrize("version", [None, LATEST, MODERN])
def test_unparseable_body_is_a_parse_error(client, db, raw, version):
    body = rpc_error(post(client, raw, version=version, headers={"Mcp-Method": "ping"}), 400, -32700)
    assert body["id"] is None


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(42, id="number"),
        pytest.param("ping", id="string"),
        pytest.param(None, id="null"),
        pytest.param({"jsonrpc": "1.0", "id": 1, "method": "tools/list"}, id="jsonrpc-1.0"),
        pytest.param({"id": 1, "method": "tools/list"}, id="no-jsonrpc"),
        pytest.param({"jsonrpc": "2.0", "id": {"n": 1}, "method": "tools/list"}, id="id-object"),
        pytest.param({"jsonrpc": "2.0", "id": True, "method": "tools/list"}, id="id-bool"),
        pytest.param({"jsonrpc": "2.0", "id": [1], "method": "tools/list"}, id="id-list"),
        pytest.param({"jsonrpc": "2.0", "id": 1, "method": 5}, id="method-number"),
        pytest.param({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": []}, id="params-list"),
        pytest.param({"jsonrpc": "2.0", "id": 1}, id="neither-request-nor-response"),
    ],
)
@pytest.mark.parametrize("version", [None, LATEST, MODERN])
def test_json_that_is_not_a_request_is_invalid(client, db, body, version):
    rpc_error(post(client, body, version=version, headers={"Mcp-Method": "tools/list"}), 400, -32600)


@pytest.mark.parametrize("version", [None, LATEST, MODERN])
def test_a_body_over_the_limit_is_413_in_json(client, db, settings, version):
    settings.COMMHUB_MAX_REQUEST_BYTES = 2048
    headers = {"Mcp-Method": "tools/list"}
    small = request("tools/list", envelope({"pad": "x" * 1000}))
    assert post(client, small, version=version, headers=headers).status_code == 200
    big = request("tools/list", envelope({"pad": "x" * 3000}))
    reply = post(client, big, version=version, headers=headers)
    assert reply.status_code == 413
    assert reply["Content-Type"].startswith("application/json")
    assert reply.json()["error"]["message"]


def test_get_inbox_says_how_to_pick_wait_seconds_for_a_client_with_a_short_timeout(client, db):
    (tool,) = [tool for tool in list_tools(client) if tool["name"] == "get_inbox"]

    description = tool["description"]
    assert "wait_seconds=30" in description  # the advice for clients that wait long stays
    assert "under your client's tool-call timeout" in description
    assert "progressToken" in description and "text/event-stream" in description


def test_unknown_tool_is_invalid_params(client, member_token):
    reply = rpc(client, "tools/call", {"name": "rm_rf", "arguments": {}}, id=3, version=LATEST, token=member_token)
    assert rpc_error(reply, 200, -32602)["id"] == 3
    reply = modern(client, "tools/call", {"name": "rm_rf", "arguments": {}}, token=member_token)
    rpc_error(reply, 400, -32602)


@pytest.mark.parametrize("arguments", [["alias"], "alias=coder", 7, True])
def test_tools_call_arguments_must_be_an_object(client, member_token, arguments):
    reply = rpc(
        client, "tools/call", {"name": "list_tasks", "arguments": arguments}, version=LATEST, token=member_token
    )
    rpc_error(reply, 200, -32602)


# --- authentication ------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["initialize", "ping", "tools/list"])
def test_handshake_discovery_needs_no_token(client, db, method):
    params = {"protocolVersion": LATEST, "capabilities": {}} if method == "initialize" else None
    assert rpc(client, method, params, version=LATEST).status_code == 200


@pytest.mark.parametrize("method", ["server/discover", "tools/list"])
def test_modern_discovery_needs_no_token(client, db, method):
    assert modern(client, method).status_code == 200


def assert_bearer_challenge(reply, request_id: Any) -> str:
    assert reply.status_code == 401, reply.content
    challenge = reply["WWW-Authenticate"]
    assert challenge.startswith('Bearer realm="commhub"')
    assert reply["Content-Type"].startswith("application/json")
    assert reply.json()["id"] == request_id
    assert "error" in reply.json()
    return challenge


@pytest.mark.parametrize("version", [None, LATEST])
def test_tools_call_without_a_token_is_401_with_a_bearer_challenge(client, db, version):
    reply = rpc(client, "tools/call", {"name": "list_tasks", "arguments": {}}, id=7, version=version)
    challenge = assert_bearer_challenge(reply, 7)
    assert "invalid_token" not in challenge


def test_modern_tools_call_without_a_token_is_401(client, db):
    reply = modern(client, "tools/call", {"name": "list_tasks", "arguments": {}}, id="m-1")
    assert_bearer_challenge(reply, "m-1")


def test_an_unknown_token_is_401_invalid_token(client, db):
    params = {"name": "list_tasks", "arguments": {}}
    reply = rpc(client, "tools/call", params, id=8, version=LATEST, token="ntok_" + "x" * 40)
    assert 'error="invalid_token"' in assert_bearer_challenge(reply, 8)


def test_a_revoked_token_is_401_invalid_token(client, network):
    token, raw = token_create(network=network, role="member")
    params = {"name": "list_tasks", "arguments": {}}
    assert rpc(client, "tools/call", params, version=LATEST, token=raw).status_code == 200
    token_revoke(token=token)
    reply = rpc(client, "tools/call", params, id=9, version=LATEST, token=raw)
    assert 'error="invalid_token"' in assert_bearer_challenge(reply, 9)


@pytest.mark.parametrize(
    ("version", "token"), [(None, None), (LATEST, None), (LATEST, "ntok_" + "x" * 40), (MODERN, None)]
)
def test_a_401_uses_a_code_the_sdks_do_not_keep_for_their_own_timeouts(client, db, version, token):
    params = {"name": "list_tasks", "arguments": {}}
    if version == MODERN:
        reply = modern(client, "tools/call", params, id=11, token=token)
    else:
        reply = rpc(client, "tools/call", params, id=11, version=version, token=token)

    assert_bearer_challenge(reply, 11)
    code = reply.json()["error"]["code"]
    # Both official SDKs raise -32000 (connection closed) and -32001 (request timeout) themselves;
    # openai-agents retried a missing token as a timeout. -32002 is retired by the MCP spec.
    assert code not in (mcp_types.CONNECTION_CLOSED, mcp_types.REQUEST_TIMEOUT, -32002)
    assert code == -32011


@pytest.mark.parametrize("authorization", ["Basic dXNlcjpwYXNz", "Token abc", "Bearer", "Bearer   "])
def test_a_non_bearer_authorization_is_401(client, member_token, authorization):
    params = {"name": "list_tasks", "arguments": {}}
    reply = rpc(client, "tools/call", params, id=10, version=LATEST, headers={"Authorization": authorization})
    assert_bearer_challenge(reply, 10)


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-authorization-server/mcp",
        "/.well-known/openid-configuration",
    ],
)
def test_well_known_paths_are_a_json_404(client, db, path):
    reply = client.get(path)
    assert reply.status_code == 404
    assert reply["Content-Type"].startswith("application/json")
    assert reply.json()["error"]


# --- origin --------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [LATEST, MODERN])
def test_a_foreign_origin_is_403(client, db, version):
    reply = rpc(client, "ping", version=version, headers={"Origin": "http://evil.example", "Mcp-Method": "ping"})
    assert reply.status_code == 403
    assert reply["Content-Type"].startswith("application/json")


def test_a_host_outside_allowed_hosts_is_refused(client, db):
    reply = client.post(MCP, data=json.dumps(PING), content_type="application/json", HTTP_HOST="evil.example.com")
    assert reply.status_code == 400


@pytest.mark.parametrize("origin", ["http://localhost:8000", "http://127.0.0.1", None])
def test_local_or_absent_origins_are_allowed(client, db, origin):
    headers = {"Origin": origin} if origin else {}
    assert result_of(rpc(client, "ping", version=LATEST, headers=headers)) == {}


def test_an_origin_in_the_allowed_setting_is_allowed(client, db, settings):
    headers = {"Origin": "https://inspector.example"}
    settings.COMMHUB_ALLOWED_ORIGINS = []
    assert rpc(client, "ping", version=LATEST, headers=headers).status_code == 403
    settings.COMMHUB_ALLOWED_ORIGINS = ["https://inspector.example"]
    assert result_of(rpc(client, "ping", version=LATEST, headers=headers)) == {}


# --- tool definitions ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, *HANDSHAKE_VERSIONS])
def test_tools_list_names_the_contracts_17_tools_first_in_order(client, db, version):
    assert_contract_first([tool["name"] for tool in list_tools(client, version)])


def test_tool_input_schemas_are_flat_objects(client, db):
    for tool in list_tools(client):
        assert tool["description"], tool["name"]
        schema = tool["inputSchema"]
        assert schema["type"] == "object", tool["name"]
        assert isinstance(schema["properties"], dict), tool["name"]
        assert isinstance(schema["required"], list), tool["name"]
        assert set(schema["required"]) <= set(schema["properties"]), tool["name"]
        assert not {"$ref", "oneOf", "anyOf"} & set(walk(tool)), tool["name"]


def test_tool_annotations_tell_reads_from_writes(client, db):
    tools = list_tools(client)
    names = {t["name"] for t in tools}
    assert {t["name"] for t in tools if t["annotations"].get("readOnlyHint") is True} == READ_ONLY_TOOLS & names
    for tool in tools:
        hints = tool["annotations"]
        if tool["name"] in READ_ONLY_TOOLS:
            continue
        assert hints["readOnlyHint"] is False, tool["name"]
        assert isinstance(hints["destructiveHint"], bool), tool["name"]
        assert isinstance(hints["idempotentHint"], bool), tool["name"]
    by_name = {t["name"]: t["annotations"] for t in tools}
    assert by_name["cancel_task"]["destructiveHint"] is True
    assert by_name["send_task"]["destructiveHint"] is False
    # claim_task moves a task to its claimer: a write, neither destructive nor repeatable (a second
    # claim is refused, task_claimed).
    assert (by_name["claim_task"]["destructiveHint"], by_name["claim_task"]["idempotentHint"]) == (False, False)


@pytest.mark.parametrize("version", ["2025-06-18", LATEST])
def test_newer_versions_give_each_tool_a_title_and_output_schema(client, db, version):
    for tool in list_tools(client, version):
        assert isinstance(tool["title"], str) and tool["title"], tool["name"]
        assert tool["outputSchema"]["type"] == "object", tool["name"]


@pytest.mark.parametrize("version", [None, "2024-11-05", "2025-03-26"])
def test_older_versions_get_no_title_or_output_schema(client, db, version):
    for tool in list_tools(client, version):
        assert "title" not in tool, tool["name"]
        assert "outputSchema" not in tool, tool["name"]


def test_modern_tools_have_title_and_output_schema(client, db):
    for tool in result_of(modern(client, "tools/list"))["tools"]:
        assert tool["title"], tool["name"]
        assert tool["outputSchema"]["type"] == "object", tool["name"]


# --- tool calls ----------------------------------------------------------------------------------


def test_a_successful_call_mirrors_its_structured_content_in_text(client, member_token):
    result = call(client, "send_task", {"alias": "coder", "task": "write quicksort"}, token=member_token)
    assert result["isError"] is False
    assert result["content"][0]["type"] == "text"
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert result["structuredContent"]["ok"] is True
    task_id = result["structuredContent"]["task_id"]
    got = call(client, "get_task", {"task_id": task_id}, token=member_token)["structuredContent"]
    assert got["task"]["content"] == "write quicksort"


@pytest.mark.parametrize(
    ("tool", "arguments", "who", "code"),
    [
        pytest.param("get_task", {"task_id": "task_nope"}, "member", "task_not_found", id="task-not-found"),
        pytest.param("send_task", {"alias": "coder", "task": "x"}, "viewer", "permission_denied", id="viewer-write"),
        pytest.param(
            "send_task", {"alias": "coder", "task": "x", "priority": "urgent"}, "member", "invalid_argument", id="bad"
        ),
    ],
)
def test_a_refusal_is_a_tool_result_with_is_error(client, member_token, viewer_token, tool, arguments, who, code):
    token = {"member": member_token, "viewer": viewer_token}[who]
    result = call(client, tool, arguments, token=token)
    assert result["isError"] is True
    outcome = result["structuredContent"]
    assert outcome["ok"] is False
    assert outcome["code"] == code
    assert isinstance(outcome["error"], str) and outcome["error"]
    assert json.loads(result["content"][0]["text"]) == outcome


def test_a_missing_required_argument_is_refused_by_name(client, member_token):
    tools = [tool for tool in list_tools(client) if tool["inputSchema"]["required"]]
    assert len([tool for tool in tools if tool["name"] in CONTRACT_TOOLS]) == 14
    assert "claim_task" in {tool["name"] for tool in tools}
    for tool in tools:
        result = call(client, tool["name"], {}, token=member_token)
        assert result["isError"] is True, tool["name"]
        assert result["structuredContent"]["code"] == "invalid_argument", tool["name"]
        assert tool["inputSchema"]["required"][0] in result["structuredContent"]["error"], tool["name"]


def test_an_unknown_argument_is_refused_by_name_and_creates_nothing(client, member_token):
    arguments = {"alias": "coder", "task": "x", "priorty": "high"}
    result = call(client, "send_task", arguments, token=member_token)
    assert result["isError"] is True
    assert "priorty" in result["structuredContent"]["error"]
    listed = call(client, "list_tasks", {}, token=member_token)["structuredContent"]
    assert listed["count"] == 0
    assert listed["tasks"] == []


def test_2024_11_05_results_carry_text_only(client, member_token):
    result = call(client, "list_tasks", {}, token=member_token, version="2024-11-05")
    assert "structuredContent" not in result
    assert result["isError"] is False
    assert json.loads(result["content"][0]["text"])["ok"] is True


def test_structured_content_matches_the_tools_output_schema(client, member_token):
    jsonschema = pytest.importorskip("jsonschema")
    schemas = {tool["name"]: tool["outputSchema"] for tool in list_tools(client)}
    sent = call(client, "send_task", {"alias": "coder", "task": "t"}, token=member_token)["structuredContent"]
    calls = [
        ("send_task", {"alias": "coder", "task": "t2"}),
        ("report_status", {"resume_id": "r-1", "alias": "coder", "status": "idle"}),
        ("get_task", {"task_id": sent["task_id"]}),
        ("list_tasks", {}),
        ("get_all_status", {}),
        ("get_session_status", {"alias": "coder"}),
        ("get_inbox", {"alias": "coder"}),
        ("get_task", {"task_id": "task_nope"}),
    ]
    for tool, arguments in calls:
        outcome = call(client, tool, arguments, token=member_token)["structuredContent"]
        jsonschema.validate(outcome, schemas[tool])
    # The open pool's tools, answered and refused (task_claimed names who has it).
    call(client, "report_status", {"resume_id": "r-1", "alias": "coder", "status": "idle", "skills": ["python"]},
         token=member_token)  # fmt: skip
    pooled = {"alias": "pool", "task": "t3", "required_skills": ["python"], "lease_seconds": 60}
    open_id = call(client, "send_task", pooled, token=member_token)["structuredContent"]["task_id"]
    calls = [
        ("send_task", {**pooled, "required_skills": ["rust"]}),  # nobody able: a warning
        ("find_agents", {"skill": "python"}),
        ("list_open_tasks", {"alias": "coder"}),
        ("claim_task", {"task_id": open_id, "alias": "coder"}),
        ("claim_task", {"task_id": open_id, "alias": "coder"}),
    ]
    outcomes = []
    for tool, arguments in calls:
        outcomes.append(call(client, tool, arguments, token=member_token)["structuredContent"])
        jsonschema.validate(outcomes[-1], schemas[tool])
    assert [outcome["ok"] for outcome in outcomes] == [True, True, True, True, False]
    assert outcomes[-2]["lease_expires_at"] and outcomes[-1]["code"] == "task_claimed"


def test_an_outsider_cannot_see_another_networks_task(client, member_token, outsider_token):
    sent = call(client, "send_task", {"alias": "coder", "task": "secret"}, token=member_token)["structuredContent"]
    result = call(client, "get_task", {"task_id": sent["task_id"]}, token=outsider_token)
    assert result["isError"] is True
    assert result["structuredContent"]["error"] == "task not found"
    assert "secret" not in result["content"][0]["text"]


def test_lone_surrogates_are_refused_or_escaped_never_a_crash(client, member_token):
    # "\ud800" is valid JSON but not text: as an argument it is refused by name, and echoed back
    # (an id, an unknown argument's name) it is escaped in the answer.
    raw = '{"jsonrpc": "2.0", "id": "\\ud800", "method": "tools/call", "params": {"name": "send_task", '
    bad_value = raw + '"arguments": {"alias": "coder", "task": "\\ud800"}}}'
    bad_name = raw + '"arguments": {"alias": "coder", "task": "x", "\\udfff": 1}}}'
    headers = {"Authorization": f"Bearer {member_token}", "MCP-Protocol-Version": LATEST}

    for body, field in [(bad_value, "task"), (bad_name, "\udfff")]:
        reply = client.post(MCP, data=body.encode(), content_type="application/json", headers=headers)
        assert reply.status_code == 200
        result = json.loads(reply.content)["result"]
        assert result["isError"] is True
        assert result["structuredContent"]["field"] == field


def test_a_malformed_origin_is_refused_not_a_crash(client):
    reply = client.post(MCP, data=json.dumps(PING), content_type="application/json", headers={"Origin": "http://[::1"})
    assert reply.status_code == 403
