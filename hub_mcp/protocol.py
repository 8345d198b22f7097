"""JSON-RPC 2.0 and MCP protocol vocabulary: versions, error codes, message shapes.

Two eras share one endpoint. The handshake era (2024-11-05 … 2025-11-25) opens with
`initialize`; the stateless era (2026-07-28) sends a self-contained envelope in every request's
`params._meta` and routing headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) that must
agree with the body. Neither needs server-side session state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)
SUPPORTED_VERSIONS = (*HANDSHAKE_VERSIONS, *MODERN_VERSIONS)
LATEST_HANDSHAKE = HANDSHAKE_VERSIONS[-1]
# A handshake-era request without the version header is 2025-03-26 (the header came in 2025-06-18).
DEFAULT_HEADERLESS_VERSION = "2025-03-26"
# Versions whose transport allows JSON-RPC batches.
BATCH_VERSIONS = frozenset({"2024-11-05", "2025-03-26"})

PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"

VERSION_HEADER = "MCP-Protocol-Version"
METHOD_HEADER = "Mcp-Method"
NAME_HEADER = "Mcp-Name"
# The query parameter of /mcp that narrows a connection's tools to a profile (hub_tools.profiles).
TOOLS_QUERY = "tools"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# No token, or a bad one (with HTTP 401). Not -32001: both official SDKs raise that code for their own
# request timeouts, so clients read a missing token as a timeout and retry it. -32011 is in the
# implementation-defined band (-32000..-32019) and used by neither SDK (-32000 and -32001 are
# theirs, -32002 is retired).
UNAUTHORIZED = -32011
HEADER_MISMATCH = -32020
UNSUPPORTED_VERSION = -32022

# The HTTP status of a stateless-era error (handshake-era errors travel in a 200, except those
# that reject the whole body: parse error and invalid request).
MODERN_ERROR_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    UNSUPPORTED_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}


@dataclass
class RpcError(Exception):
    """A protocol fault, answered as a JSON-RPC error object."""

    code: int
    message: str
    data: Any = None
    http_status: int | None = None  # overrides the era's default status for this code

    def as_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def unsupported_version(requested: object) -> RpcError:
    return RpcError(
        UNSUPPORTED_VERSION,
        f"Unsupported protocol version {requested!r}; this server speaks {', '.join(SUPPORTED_VERSIONS)}.",
        data={"supported": list(SUPPORTED_VERSIONS), "requested": requested},
    )


@dataclass(frozen=True)
class Message:
    """One decoded JSON-RPC message from the client."""

    raw: dict[str, Any]

    @property
    def is_request(self) -> bool:
        return "method" in self.raw and "id" in self.raw

    @property
    def is_notification(self) -> bool:
        return "method" in self.raw and "id" not in self.raw

    @property
    def is_response(self) -> bool:
        return "method" not in self.raw and "id" in self.raw and ("result" in self.raw or "error" in self.raw)

    @property
    def id(self) -> Any:
        return self.raw.get("id")

    @property
    def method(self) -> Any:
        return self.raw.get("method")

    @property
    def params(self) -> dict[str, Any]:
        params = self.raw.get("params")
        return params if isinstance(params, dict) else {}

    def check_shape(self) -> None:
        """Refuse what is not a JSON-RPC 2.0 request, notification or response."""
        raw = self.raw
        if raw.get("jsonrpc") != "2.0":
            raise RpcError(INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0".')
        if "id" in raw and (isinstance(raw["id"], bool) or not isinstance(raw["id"], str | int)):
            raise RpcError(INVALID_REQUEST, "Invalid request: id must be a string or an integer.")
        if "method" in raw and not isinstance(raw["method"], str):
            raise RpcError(INVALID_REQUEST, "Invalid request: method must be a string.")
        if "params" in raw and not isinstance(raw["params"], dict):
            raise RpcError(INVALID_REQUEST, "Invalid request: params must be an object.")
        if not (self.is_request or self.is_notification or self.is_response):
            raise RpcError(INVALID_REQUEST, "Invalid request: not a JSON-RPC request, notification or response.")


def response(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: Any, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.as_error()}


@dataclass(frozen=True)
class Exchange:
    """What a method handler may know of the request it answers: its protocol version and era, and
    the tool profile its URL asks for (`/mcp?tools=agent`), if any."""

    version: str
    modern: bool
    tools: str | None = None
