"""Latency at scale: 1,000,000 tasks, 10,000 sessions and 100,000 completions in one network.

The rows are written with set-based SQL (a minute, not an hour of tool calls), shaped like a
long-running fleet: most tasks finished, one waiting task per agent, sessions half online.
"""

from __future__ import annotations

import asyncio
import random
import time

import aiohttp
from django.db import connection

from bench import calls
from bench.load import Row
from bench.server import Server
from bench.setup import Fleet

SESSIONS = 10_000
CALLS = 300  # per read, one client: latency, not throughput
BUDGET = 15.0  # seconds per read at most (get_all_status answers 10,000 sessions at a time)

PRELOAD = [
    # Finished work: statuses spread like a fleet's history, to agent-0 … agent-9999.
    """
    INSERT INTO hub_tasks_task (task_id, network_id, from_name, to_name, priority, status, content, result,
        requires_response, created_by, sender_key, created_at, delivered_at, completed_at, expires_at,
        max_attempts, on_lost, retry_backoff_seconds)
    SELECT md5('t' || i)::uuid::text, %(network)s, 'lead-' || (i %% 50), 'agent-' || (i %% 10000),
        (ARRAY['high','normal','normal','low'])[1 + i %% 4],
        (ARRAY['replied','replied','replied','replied','failed','cancelled','expired','acked'])[1 + i %% 8],
        'preloaded task ' || i, 'result ' || i, true, 'bench', 'bench',
        now() - make_interval(secs => i), now() - make_interval(secs => i),
        now() - make_interval(secs => i) + interval '5 minutes', now() - make_interval(secs => i) + interval '1 hour',
        1, 'requeue', 30
    FROM generate_series(1, %(tasks)s) AS i
    """,
    # One task per agent still waiting in its inbox, with time to live.
    """
    INSERT INTO hub_tasks_task (task_id, network_id, from_name, to_name, priority, status, content,
        requires_response, created_by, sender_key, created_at, delivered_at, expires_at, max_attempts, on_lost,
        retry_backoff_seconds)
    SELECT md5('w' || i)::uuid::text, %(network)s, 'lead-0', 'agent-' || i, 'normal', 'delivered',
        'waiting task ' || i, true, 'bench', 'bench', now(), now(), now() + interval '1 day', 1, 'requeue', 30
    FROM generate_series(0, %(sessions)s - 1) AS i
    """,
    """
    INSERT INTO hub_tasks_inboxmessage (id, network_id, to_alias, type, priority, content, from_session,
        task_id, created_at)
    SELECT md5('w' || i)::uuid::text, %(network)s, 'agent-' || i, 'task', 'normal', 'waiting task ' || i,
        'lead-0', md5('w' || i)::uuid::text, now()
    FROM generate_series(0, %(sessions)s - 1) AS i
    """,
    # Each task's history: its last move.
    """
    INSERT INTO hub_tasks_taskevent (task_id, kind, from_status, to_status, actor, detail, created_at)
    SELECT task_id, 'status', 'delivered', status, 'bench', '', created_at FROM hub_tasks_task
    WHERE network_id = %(network)s
    """,
    """
    INSERT INTO hub_agents_agentsession (network_id, resume_id, alias, status, agent, model, hostname,
        created_at, last_seen_at)
    SELECT %(network)s, 'resume-' || i, 'agent-' || i, (ARRAY['working','idle','blocked'])[1 + i %% 3],
        'claude-code', 'opus', 'host-' || (i %% 100), now() - interval '1 day',
        now() - make_interval(secs => (i %% 2) * 3600 + i %% 300)
    FROM generate_series(0, %(sessions)s - 1) AS i
    """,
    """
    INSERT INTO hub_tasks_completion (id, network_id, session_name, task, result, score, duration_minutes,
        completed_at, task_id)
    SELECT md5('c' || i)::uuid::text, %(network)s, 'agent-' || (i %% 10000), 'preloaded task ' || i,
        'result ' || i, i %% 11, 1 + i %% 30, now() - make_interval(secs => i), md5('t' || i)::uuid::text
    FROM generate_series(1, %(completions)s) AS i
    """,
]


def preload(fleet: Fleet, *, tasks: int) -> float:
    started = time.perf_counter()
    values = {"network": fleet.network_id, "tasks": tasks, "sessions": SESSIONS, "completions": tasks // 10}
    with connection.cursor() as cursor:
        for statement in PRELOAD:
            cursor.execute(statement, values)
        for table in ("hub_tasks_task", "hub_tasks_taskevent", "hub_tasks_inboxmessage", "hub_agents_agentsession",
                      "hub_tasks_completion"):  # fmt: skip
            cursor.execute(f"VACUUM ANALYZE {table}")
    return time.perf_counter() - started


def run(hub: Server, fleet: Fleet, *, tasks: int) -> list[Row]:
    took = preload(fleet, tasks=tasks)
    print(f"preloaded {tasks:,} tasks, {SESSIONS:,} sessions, {tasks // 10:,} completions in {took:.0f} s")
    return asyncio.run(_measure(hub, fleet, tasks))


PAGE = 100  # sessions a page, for get_all_status with limit and cursor
PAGED = f"get_all_status limit={PAGE}, following next_cursor"
NO_CURSOR = "not measured: no cursor yet"


async def _measure(hub: Server, fleet: Fleet, tasks: int) -> list[Row]:
    task_ids = [row[0] for row in _sample_task_ids()]
    page: dict[str, str] = {}  # the paged read's next cursor; none: start over at the first page

    def paged() -> dict[str, object]:
        return {"limit": PAGE, **page}

    reads = [
        ("get_inbox", lambda: {"alias": f"agent-{random.randrange(SESSIONS)}"}),
        ("get_task", lambda: {"task_id": random.choice(task_ids)}),
        ("list_tasks (with whole-scope stats)", lambda: {}),
        ("list_tasks alias=… (with stats)", lambda: {"alias": f"agent-{random.randrange(SESSIONS)}"}),
        ("get_all_status", lambda: {}),
        (PAGED, paged),
        ("get_completions", lambda: {}),
    ]
    rows = []
    async with aiohttp.ClientSession(headers=calls.bearer(fleet.operator_token)) as session:
        pages = {"limit", "cursor"} <= await calls.tool_arguments(session, hub.url, "get_all_status")
        for name, arguments in reads:
            tool = name.split(" ")[0]
            row = Row("scale", name, 1, note=f"{tasks:,} tasks", facts={"tasks": tasks})
            if name == PAGED and not pages:
                row.note = NO_CURSOR
                rows.append(row)
                continue
            until = time.perf_counter() + BUDGET
            for _ in range(CALLS):
                if time.perf_counter() > until:
                    break
                started = time.perf_counter()
                result = await calls.tool(session, hub.url, tool, arguments())
                row.latencies.append(time.perf_counter() - started)
                row.requests += 1
                row.errors += result.get("ok") is not True
                if name == PAGED:
                    page.clear()
                    page.update({"cursor": result["next_cursor"]} if result.get("next_cursor") else {})
            rows.append(row)
    return rows


def _sample_task_ids() -> list[tuple[str]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT task_id FROM hub_tasks_task TABLESAMPLE SYSTEM (1) LIMIT 2000")
        return cursor.fetchall()
