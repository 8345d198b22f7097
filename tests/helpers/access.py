"""Calling a tool over either transport, and watching what a call writes: the access tests' shared parts
(tests/test_access_matrix.py, tests/test_access_identity.py, tests/test_impersonation.py).

`invoke` calls a tool over MCP (POST /mcp) or REST (/api/v1/) and answers the tool's result object
either way; `assert_answered` / `assert_tool_refused` read it. `fingerprint` is every row a write could
add or change. /mcp and the REST inbox read in pool threads on connections of their own
(hub_core.waiting), so a test calling them needs committed data: `committed_data` builds it (and flushes
at the end, as a transactional test would) and `rows_restored` puts back what a test changed.
Everything else may run over data built once in `rolled_back_data`, each test in its own rolled-back
transaction (pytest-django's `db`). `make_strict` puts a network under the strict identity policy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar
from urllib.parse import quote

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.http import HttpResponse
from django.test import Client
from django.test.utils import CaptureQueriesContext

from hub_agents.models import AgentSession, AuditEntry, Network, Node, NodeCommand
from hub_agents.services import network_policy_set
from hub_approvals.models import Approval, ApprovalRule, ApprovalVote
from hub_channels.models import Channel, ChannelMember, ChannelPost
from hub_events.models import Event, EventCounter
from hub_schedules.models import Schedule, ScheduleRun
from hub_search.models import SearchEntry
from hub_tasks.models import (
    AgentUsage,
    Budget,
    Cap,
    CapSlot,
    Completion,
    InboxMessage,
    Question,
    Task,
    TaskAttempt,
    TaskCount,
    TaskDeadline,
    TaskDependency,
    TaskEvent,
)
from hub_tools.models import ReplayKey
from hub_webhooks.models import Delivery, Subscription
from tests.helpers.mcp import call
from tests.helpers.rest import assert_refused

World = TypeVar("World")

API = "/api/v1/"

# Each tool's REST endpoint: method and path; {name} segments are taken out of the arguments.
ROUTES: dict[str, tuple[str, str]] = {
    "get_all_status": ("get", "sessions"),
    "report_status": ("post", "sessions/report"),
    "get_session_status": ("get", "sessions/{alias}"),  # alias "report" reaches GET sessions/report
    "get_inbox": ("get", "sessions/{alias}/inbox"),
    "ack_inbox": ("post", "sessions/{alias}/inbox/{message_id}/ack"),
    "list_tasks": ("get", "tasks"),
    "send_task": ("post", "tasks"),
    "get_task": ("get", "tasks/{task_id}"),
    "send_ack": ("post", "tasks/{task_id}/ack"),
    "retry_task": ("post", "tasks/{task_id}/retry"),
    "cancel_task": ("post", "tasks/{task_id}/cancel"),
    "reassign_task": ("post", "tasks/{task_id}/reassign"),
    "send_message": ("post", "messages"),
    "send_reply": ("post", "replies"),
    "broadcast": ("post", "broadcasts"),
    "get_completions": ("get", "completions"),
    "report_completion": ("post", "completions"),
    # Beyond the contract: skills and the open pool.
    "find_agents": ("get", "agents"),
    "list_open_tasks": ("get", "pool"),
    "claim_task": ("post", "tasks/{task_id}/claim"),
    # Beyond the contract: questions to a person.
    "ask_operator": ("post", "tasks/{task_id}/questions"),
    "list_questions": ("get", "questions"),
    "answer_question": ("post", "questions/{question_id}/answer"),
    # Beyond the contract: approvals.
    "list_approvals": ("get", "approvals"),
    "decide_approval": ("post", "approvals/{approval_id}/decide"),
    "get_thread": ("get", "tasks/{task_id}/thread"),
    # Beyond the contract: channels.
    "channel_list": ("get", "channels"),
    "channel_create": ("post", "channels"),
    "channel_info": ("get", "channels/{channel_id}"),
    "channel_join": ("post", "channels/{channel_id}/join"),
    "channel_leave": ("post", "channels/{channel_id}/leave"),
    "channel_configure": ("post", "channels/{channel_id}/configure"),
    "channel_read": ("get", "channels/{channel_id}/posts"),
    "channel_post": ("post", "channels/{channel_id}/posts"),
    # Beyond the contract: search.
    "search": ("get", "search"),
    # Beyond the contract: nodes.
    "list_nodes": ("get", "nodes"),
    "report_node": ("post", "nodes/report"),
    "node_commands": ("get", "nodes/commands"),
    "node_command": ("post", "nodes/commands"),
    "node_command_ack": ("post", "nodes/commands/{command_id}/ack"),
    # Beyond the contract: recurring schedules.
    "schedule_list": ("get", "schedules"),
    "schedule_create": ("post", "schedules"),
    "schedule_pause": ("post", "schedules/{schedule_id}/pause"),
    "schedule_resume": ("post", "schedules/{schedule_id}/resume"),
    "schedule_run_now": ("post", "schedules/{schedule_id}/run"),
    "schedule_delete": ("post", "schedules/{schedule_id}/delete"),
    # Beyond the contract: concurrency caps.
    "cap_list": ("get", "caps"),
    "cap_set": ("post", "caps"),
    "cap_delete": ("post", "caps/{cap_id}/delete"),
    # Beyond the contract: budgets.
    "budget_list": ("get", "budgets"),
    "budget_set": ("post", "budgets"),
    "budget_delete": ("post", "budgets/{budget_id}/delete"),
}

# Beyond the tools, REST only: webhooks (hub_tools.webhook_tools), for a network's owners and admins.
WEBHOOK_ROUTES: dict[str, tuple[str, str]] = {
    "webhook_list": ("get", "webhooks"),
    "webhook_create": ("post", "webhooks"),
    "webhook_enable": ("post", "webhooks/{webhook_id}/enable"),
    "webhook_disable": ("post", "webhooks/{webhook_id}/disable"),
    "webhook_delete": ("post", "webhooks/{webhook_id}/delete"),
    "webhook_deliveries": ("get", "webhooks/{webhook_id}/deliveries"),
}

# How each refusal reads: (REST status, the MCP result's `error` wording).
REFUSALS: dict[str, tuple[int, str]] = {
    "task_not_found": (404, "task not found"),
    "message_not_found": (404, "message not found or not yours"),
    "parent_task_not_found": (404, "parent task not found"),
    "question_not_found": (404, "question_not_found"),
    "approval_not_found": (404, "approval_not_found"),
    "channel_not_found": (404, "channel_not_found"),
    "webhook_not_found": (404, "webhook_not_found"),
    "schedule_not_found": (404, "schedule_not_found"),
    "command_not_found": (404, "command_not_found"),
    "cap_not_found": (404, "cap_not_found"),
    "budget_not_found": (404, "budget_not_found"),
    "permission_denied": (403, "permission_denied"),
    "network_token_required": (403, "network_token_required"),
    "alias_not_yours": (403, "alias_not_yours"),
}


def make_strict(network: Network) -> Network:
    """The network, switched to the strict identity policy."""
    network_policy_set(network=network, policy="strict", by="test")
    return network


# --- calling a tool over either transport ----------------------------------------------------------


@dataclass
class Outcome:
    body: dict[str, Any]  # the tool's result object: REST body, or MCP structuredContent
    response: HttpResponse | None = None  # REST only


def rest_request(tool: str, arguments: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(method, path under /api/v1/, query or body) of the tool's endpoint."""
    method, template = ROUTES[tool] if tool in ROUTES else WEBHOOK_ROUTES[tool]
    rest = dict(arguments)
    path = re.sub(r"\{(\w+)\}", lambda match: quote(str(rest.pop(match.group(1))), safe=""), template)
    return method, path, rest


def invoke(client: Client, transport: str, token: str, tool: str, arguments: dict[str, Any]) -> Outcome:
    if transport == "mcp":
        result = call(client, tool, arguments, token=token)
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
        assert result["isError"] is (not result["structuredContent"]["ok"])
        return Outcome(result["structuredContent"])
    method, path, rest = rest_request(tool, arguments)
    headers = {"Authorization": f"Bearer {token}"}
    if method == "get":
        response = client.get(API + path, rest, headers=headers)
    else:
        response = client.post(API + path, json.dumps(rest), content_type="application/json", headers=headers)
    assert response["Content-Type"].startswith("application/json"), response.content
    return Outcome(response.json(), response)


def assert_tool_refused(outcome: Outcome, code: str) -> dict[str, Any]:
    status, wording = REFUSALS[code]
    if outcome.response is not None:
        return assert_refused(outcome.response, status, code)
    body = outcome.body  # MCP: the contract's wording in `error`, the stable code beside it
    assert body["ok"] is False, body
    assert (body["code"], body["error"]) == (code, wording), body
    assert isinstance(body["message"], str) and body["message"]
    return body


def assert_answered(outcome: Outcome) -> dict[str, Any]:
    assert outcome.body["ok"] is True, outcome.body
    assert outcome.response is None or outcome.response.status_code in (200, 201), outcome.body
    return outcome.body


def reads_in_pool_thread(transport: str, tool: str) -> bool:
    """Whether the call reads in a pool thread, on a connection of its own: /mcp and the REST inbox."""
    return transport == "mcp" or tool == "get_inbox"


def params(cases: dict[str, Any], transports: tuple[str, ...], *, needs_commit: bool) -> list[Any]:
    """One test id per (transport, case), for the class whose data suits the transport: a case is
    keyed by its tool, or a tuple whose first item is the tool."""
    found = []
    for transport in transports:
        for case_id, case in cases.items():
            tool = case[0] if isinstance(case, tuple) else case_id
            if reads_in_pool_thread(transport, tool) == needs_commit:
                found.append(pytest.param(transport, case_id, id=f"{transport}-{case_id}"))
    return found


# --- what a write could change ---------------------------------------------------------------------

# Parents before children: rows_restored puts deleted rows back in this order.
ROW_MODELS: dict[str, tuple[Any, str]] = {
    "sessions": (AgentSession, "network_id"),
    "nodes": (Node, "network_id"),
    "node_commands": (NodeCommand, "network_id"),
    "tasks": (Task, "network_id"),
    "task_events": (TaskEvent, "task__network_id"),
    "task_attempts": (TaskAttempt, "task__network_id"),
    "task_dependencies": (TaskDependency, "task__network_id"),
    "task_counts": (TaskCount, "network_id"),
    "task_deadlines": (TaskDeadline, "network_id"),
    "usage": (AgentUsage, "network_id"),
    "inbox": (InboxMessage, "network_id"),
    "completions": (Completion, "network_id"),
    "questions": (Question, "network_id"),
    "approval_rules": (ApprovalRule, "network_id"),
    "approvals": (Approval, "network_id"),
    "approval_votes": (ApprovalVote, "approval__network_id"),
    "channels": (Channel, "network_id"),
    "channel_members": (ChannelMember, "channel__network_id"),
    "channel_posts": (ChannelPost, "channel__network_id"),
    "search_entries": (SearchEntry, "network_id"),
    "events": (Event, "network_id"),
    "event_counters": (EventCounter, "network_id"),
    "audit": (AuditEntry, "network_id"),
    "webhooks": (Subscription, "network_id"),
    "webhook_deliveries": (Delivery, "subscription__network_id"),
    "replay_keys": (ReplayKey, "network"),
    "schedules": (Schedule, "network_id"),
    "schedule_runs": (ScheduleRun, "schedule__network_id"),
    "caps": (Cap, "network_id"),
    "cap_slots": (CapSlot, "cap__network_id"),
    "budgets": (Budget, "network_id"),
}


def fingerprint(network_id: str | None = None) -> dict[str, list[tuple[Any, ...]]]:
    """Every row a write could add or change, in one network or in all of them: each table's rows as
    the database holds them, by statements the ORM compiled once (the access tests take about a
    thousand fingerprints; compiling 27 querysets each time was most of their cost)."""
    with connection.cursor() as cursor:
        found = {}
        for name, (model, scope) in ROW_MODELS.items():
            cursor.execute(_rows_sql(model, None if network_id is None else scope), _scoped(network_id))
            found[name] = cursor.fetchall()
    return found


def _scoped(network_id: str | None) -> list[str]:
    return [] if network_id is None else [network_id]


@cache
def _rows_sql(model: Any, scope: str | None) -> str:
    rows = model.objects.all() if scope is None else model.objects.filter(**{scope: _SCOPE})
    sql, params = rows.order_by("pk").values().query.sql_with_params()
    assert list(params) == _scoped(None if scope is None else _SCOPE), (model, params)
    return sql


_SCOPE = "the network"  # compiled in as a parameter, given at each execution


# A statement that writes, itself or in a common table expression (PostgreSQL's one-statement writes:
# WITH acked AS (UPDATE ...) SELECT ...); a token's last use is recorded on every authenticated call
# (and is no write of the call's own).
WRITE = re.compile(
    r'^\s*(INSERT|UPDATE|DELETE|REPLACE)\b|^\s*WITH\b.*?\b(INSERT\s+INTO|UPDATE\s+"?\w+"?\s+SET|DELETE\s+FROM)\b',
    re.IGNORECASE | re.DOTALL,
)
TOKEN_USE = re.compile(r'^\s*UPDATE\s+"hub_agents_apitoken"\s+SET\s+"last_used_at"', re.IGNORECASE)


@contextmanager
def writes_recorded() -> Iterator[list[str]]:
    """The SQL statements the block writes with, on this thread's connection (over data in a
    rolled-back transaction /mcp's and the REST inbox's pool work runs here too: tests/plugins/pool.py).
    A token's use is left out. Cheaper than two fingerprints, and sees every table."""
    written: list[str] = []
    with CaptureQueriesContext(connection) as queries:
        yield written
    written.extend(
        query["sql"]
        for query in queries.captured_queries
        if WRITE.match(query["sql"]) and not TOKEN_USE.match(query["sql"])
    )


def rows_by_pk(model: Any) -> dict[Any, dict[str, Any]]:
    return {row[model._meta.pk.attname]: row for row in model.objects.values()}


# --- worlds built once per class -------------------------------------------------------------------


@contextmanager
def committed_data(build: Callable[[], World]) -> Iterator[World]:
    """`build()`'s world, committed (for calls that read on connections of their own); the database
    is flushed afterwards, as a transactional test leaves it. Call with the database unblocked."""
    try:
        yield build()
    finally:
        call_command("flush", interactive=False, verbosity=0)


@contextmanager
def rolled_back_data(build: Callable[[], World]) -> Iterator[World]:
    """`build()`'s world in a transaction rolled back at the end (Django's setUpTestData): each test
    runs in a savepoint of it. Call with the database unblocked."""
    outer = transaction.atomic()
    outer.__enter__()
    try:
        yield build()
    finally:
        transaction.set_rollback(True)
        outer.__exit__(None, None, None)


@contextmanager
def rows_restored() -> Iterator[None]:
    """Over committed data: rows the block adds, changes or deletes are put back after it, so each
    test starts from the same world even after a failure. Call with the database unblocked."""
    before = {model: rows_by_pk(model) for model, _ in ROW_MODELS.values()}
    held = fingerprint()
    try:
        yield
    finally:
        unchanged = fingerprint()
        for (model, rows), name in zip(before.items(), ROW_MODELS, strict=True):
            if unchanged[name] == held[name]:
                continue
            now = rows_by_pk(model)
            if now.keys() - rows.keys():
                model.objects.exclude(pk__in=rows).delete()
            for pk, row in rows.items():
                if pk not in now:
                    model.objects.create(**row)
                elif now[pk] != row:
                    model.objects.filter(pk=pk).update(**row)
