"""Live hubs for the MCP endpoint's HTTP-level tests: the same daphne fixtures as the delivery tests."""

from __future__ import annotations

from tests.hub_events.conftest import agent_http, hub_server  # noqa: F401  (fixtures, shared not copied)
