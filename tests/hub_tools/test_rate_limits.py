"""Per-token write limits, over both transports: REST answers 429 + Retry-After, MCP a rate_limited result.

Everything goes through Django's test client (the real URL conf, middleware and tools). Each test
gets its own count prefix (tests/conftest.py `fresh_rate_limits`); a test sets its limit and calls
`ratelimit.reset()` so the limiter is rebuilt from the settings; and its clock stands still
(`one_window`), unless it moves it.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.http import HttpResponse
from django.test import Client
from freezegun import freeze_time

from hub_agents.models import Network
from hub_agents.services import token_create
from hub_core import ratelimit
from tests.helpers import bearer

# /mcp and the inbox endpoint run their database work through hub_core.waiting's pool: in these rolled-back
# tests it runs on the test's own thread and connection (tests/plugins/pool.py), so it sees the test's rows.
pytestmark = pytest.mark.django_db

API = "/api/v1/"
MCP_VERSION = "2025-11-25"


# --- helpers -------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def one_window() -> Iterator[None]:
    """Every write of a test counts in one window, whenever and however slowly it runs. The in-process
    count (`limits`' memory storage, the default without Redis) cuts its windows at fixed moments (each
    minute's start for /minute) and the sliding window weighs the previous window's count by what is
    left of it: a test that ran across a minute's start found its first writes partly forgotten, and a
    write it expected refused went through (issue 24; under load, or a clock that moves on 2 s at each
    reading). So the clock is the test's, mid-window, moving a millisecond at each reading (rows keep
    their order); a test that moves it further freezes it again itself. Redis counts from a window's
    first write (key TTLs, its own time), which no test outlasts."""
    with freeze_time("2030-01-01 12:00:20.5", auto_tick_seconds=0.001):
        yield


def limit_writes(settings: Any, limit: str, *, storage: str | None = None) -> None:
    settings.COMMHUB_WRITE_RATE_LIMIT = limit
    if storage is not None:
        settings.COMMHUB_RATE_LIMIT_STORAGE = storage
    ratelimit.reset()


def new_token(network: Network, name: str = "agent") -> str:
    return token_create(network=network, role="member", name=name)[1]


def rest_send_task(client: Client, token: str, task: str, alias: str = "coder") -> HttpResponse:
    body = json.dumps({"alias": alias, "task": task})
    return client.post(API + "tasks", data=body, content_type="application/json", headers=bearer(token))


def rest_read(client: Client, token: str, path: str) -> dict[str, Any]:
    response = client.get(API + path, headers=bearer(token))
    assert response.status_code == 200, response.content
    assert response.json()["ok"] is True
    return response.json()


def mcp_call(client: Client, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """tools/call; the JSON-RPC result (a protocol error fails the test)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    reply = client.post(
        "/mcp",
        data=json.dumps(body),
        content_type="application/json",
        headers={**bearer(token), "MCP-Protocol-Version": MCP_VERSION},
    )
    assert reply.status_code == 200, reply.content
    answer = reply.json()
    assert "error" not in answer, answer
    return answer["result"]


def mcp_outcome(result: dict[str, Any]) -> dict[str, Any]:
    """The tool's result object; the text content and structuredContent must agree."""
    outcome = json.loads(result["content"][0]["text"])
    assert result["structuredContent"] == outcome
    assert result["isError"] is (not outcome["ok"])
    return outcome


def mcp_send_task(client: Client, token: str, task: str, alias: str = "coder") -> dict[str, Any]:
    return mcp_outcome(mcp_call(client, token, "send_task", {"alias": alias, "task": task}))


def assert_written(response: HttpResponse) -> dict[str, Any]:
    assert response.status_code == 201, response.content
    assert response.json()["ok"] is True
    return response.json()


def assert_rest_limited(response: HttpResponse, window: int) -> int:
    """A 429 with Retry-After and the rate_limited body; the seconds to wait."""
    assert response.status_code == 429, response.content
    assert response["Content-Type"].startswith("application/json")
    retry_after = int(response["Retry-After"])  # a whole number of seconds, as RFC 9110 wants
    assert 1 <= retry_after <= window
    body = response.json()
    assert set(body) == {"ok", "error", "message", "retry_after"}, body
    assert (body["ok"], body["error"], body["retry_after"]) == (False, "rate_limited", retry_after)
    assert isinstance(body["message"], str) and body["message"]
    return retry_after


def assert_mcp_limited(outcome: dict[str, Any], window: int) -> int:
    assert outcome["ok"] is False
    assert outcome["error"] == "rate_limited"
    assert isinstance(outcome["message"], str) and outcome["message"]
    retry_after = outcome["retry_after"]
    assert isinstance(retry_after, int) and 1 <= retry_after <= window
    return retry_after


def task_texts(client: Client, token: str) -> list[str]:
    return sorted(task["content"] for task in rest_read(client, token, "tasks?limit=100")["tasks"])


# --- the limit on each transport ------------------------------------------------------------------


def test_rest_write_past_the_limit_is_429_with_retry_after(client, network, settings):
    limit_writes(settings, "3/minute")
    token = new_token(network)

    for n in range(3):
        assert_written(rest_send_task(client, token, f"task {n}"))
    assert_rest_limited(rest_send_task(client, token, "one too many"), window=60)
    # Still refused: a refusal is not itself a free pass for the next write.
    assert_rest_limited(rest_send_task(client, token, "and another"), window=60)


def test_mcp_write_past_the_limit_is_a_rate_limited_tool_result(client, network, settings):
    limit_writes(settings, "3/minute")
    token = new_token(network)

    for n in range(3):
        assert mcp_send_task(client, token, f"task {n}")["ok"] is True
    result = mcp_call(client, token, "send_task", {"alias": "coder", "task": "one too many"})

    assert result["isError"] is True  # a tool result the model reads, not a JSON-RPC error
    assert_mcp_limited(mcp_outcome(result), window=60)


def test_another_token_of_the_same_network_is_not_limited(client, network, settings):
    limit_writes(settings, "2/minute")
    noisy, quiet = new_token(network, "noisy"), new_token(network, "quiet")
    for n in range(2):
        assert_written(rest_send_task(client, noisy, f"noisy {n}"))
    assert_rest_limited(rest_send_task(client, noisy, "noisy 2"), window=60)

    assert_written(rest_send_task(client, quiet, "quiet 0"))
    assert mcp_send_task(client, quiet, "quiet 1")["ok"] is True

    # Same moment: the noisy token is still limited on both transports, the quiet one's limit now reached too.
    assert_rest_limited(rest_send_task(client, noisy, "noisy 3"), window=60)
    assert_mcp_limited(mcp_send_task(client, noisy, "noisy 4"), window=60)
    assert_rest_limited(rest_send_task(client, quiet, "quiet 2"), window=60)


def test_reads_keep_working_for_a_limited_token(client, network, settings):
    limit_writes(settings, "2/minute")
    token = new_token(network)
    report = {"resume_id": "r-coder", "alias": "coder", "status": "idle"}
    assert mcp_call(client, token, "report_status", report)["isError"] is False
    task_id = assert_written(rest_send_task(client, token, "first"))["task_id"]
    assert_rest_limited(rest_send_task(client, token, "refused"), window=60)

    for path in ("sessions/coder/inbox", "tasks", f"tasks/{task_id}", "sessions", "sessions/coder", "completions"):
        rest_read(client, token, path)
    assert [m["id"] for m in rest_read(client, token, "sessions/coder/inbox")["messages"]] == [task_id]
    for tool, arguments in [
        ("get_inbox", {"alias": "coder"}),
        ("list_tasks", {}),
        ("get_task", {"task_id": task_id}),
        ("get_all_status", {}),
        ("get_session_status", {"alias": "coder"}),
        ("get_completions", {}),
    ]:
        assert mcp_outcome(mcp_call(client, token, tool, arguments))["ok"] is True, tool

    # The reads spent nothing, and freed nothing: the token is still limited.
    assert_mcp_limited(mcp_send_task(client, token, "still refused"), window=60)


def test_writes_count_across_both_transports(client, network, settings):
    limit_writes(settings, "3/minute")
    token = new_token(network)

    assert mcp_send_task(client, token, "mcp 1")["ok"] is True
    assert mcp_send_task(client, token, "mcp 2")["ok"] is True
    assert_written(rest_send_task(client, token, "rest 1"))

    assert_rest_limited(rest_send_task(client, token, "rest 2"), window=60)
    assert_mcp_limited(mcp_send_task(client, token, "mcp 3"), window=60)


def test_every_kind_of_write_counts(client, network, settings):
    limit_writes(settings, "3/minute")
    token = new_token(network)
    report = {"resume_id": "r-coder", "alias": "coder", "status": "idle"}

    assert mcp_outcome(mcp_call(client, token, "report_status", report))["ok"] is True
    assert mcp_outcome(mcp_call(client, token, "send_message", {"alias": "coder", "message": "hi"}))["ok"] is True
    assert mcp_outcome(mcp_call(client, token, "broadcast", {"message": "all"}))["ok"] is True

    assert_mcp_limited(mcp_outcome(mcp_call(client, token, "report_status", report)), window=60)


def test_the_refused_write_wrote_nothing(client, network, settings):
    limit_writes(settings, "2/minute")
    token = new_token(network)
    kept = [assert_written(rest_send_task(client, token, f"kept {n}"))["task_id"] for n in range(2)]

    assert_rest_limited(rest_send_task(client, token, "refused on rest"), window=60)
    assert_mcp_limited(mcp_send_task(client, token, "refused on mcp"), window=60)

    assert task_texts(client, token) == ["kept 0", "kept 1"]
    assert [m["id"] for m in rest_read(client, token, "sessions/coder/inbox")["messages"]] == kept


# --- the window ------------------------------------------------------------------------------------


def test_retry_after_says_when_the_limit_frees_up(client, network, settings):
    """In-process storage, frozen time: `limits`' memory storage reads time.time(), which freezegun moves."""
    limit_writes(settings, "3/minute", storage="memory://")
    with freeze_time("2030-01-01 12:00:20.5") as clock:
        token = new_token(network)
        for n in range(3):
            assert_written(rest_send_task(client, token, f"task {n}"))
        retry_after = assert_rest_limited(rest_send_task(client, token, "too soon"), window=60)

        clock.tick(retry_after)
        assert_written(rest_send_task(client, token, "after retry-after"))

        clock.tick(120)  # two whole windows: the count is forgotten
        for n in range(3):
            assert_written(rest_send_task(client, token, f"fresh {n}"))
        assert_rest_limited(rest_send_task(client, token, "over again"), window=60)

        assert "too soon" not in task_texts(client, token)


def test_the_shared_redis_count_frees_up_after_retry_after(client, network, settings):
    """Redis keeps time itself (key TTLs), so frozen time cannot move it: a one-second window, really waited."""
    if not settings.COMMHUB_RATE_LIMIT_STORAGE.startswith("redis"):
        pytest.skip("needs the Redis storage (CI's PostgreSQL+Redis run)")
    limit_writes(settings, "1/second")
    token = new_token(network)
    assert_written(rest_send_task(client, token, "first"))
    retry_after = assert_rest_limited(rest_send_task(client, token, "too soon"), window=1)

    time.sleep(retry_after + 0.2)

    assert_written(rest_send_task(client, token, "after retry-after"))


# --- configuration and failure ---------------------------------------------------------------------


def test_off_turns_the_limit_off(client, network, settings):
    limit_writes(settings, "1/minute")
    token = new_token(network)
    assert_written(rest_send_task(client, token, "first"))
    assert_rest_limited(rest_send_task(client, token, "limited"), window=60)

    limit_writes(settings, "off")

    for n in range(5):
        assert_written(rest_send_task(client, token, f"rest {n}"))
        assert mcp_send_task(client, token, f"mcp {n}")["ok"] is True


def test_a_broken_storage_lets_writes_through(client, network, settings, caplog):
    limit_writes(settings, "1/minute", storage="redis://127.0.0.1:1/0")  # nothing listens on port 1
    token = new_token(network)

    with caplog.at_level(logging.WARNING, logger="hub_tools.ratelimit"):
        for n in range(3):
            assert_written(rest_send_task(client, token, f"rest {n}"))
        assert mcp_send_task(client, token, "mcp 0")["ok"] is True

    assert task_texts(client, token) == ["mcp 0", "rest 0", "rest 1", "rest 2"]
    warnings = [r for r in caplog.records if r.name == "hub_tools.ratelimit" and r.levelno == logging.WARNING]
    assert len(warnings) == 4
