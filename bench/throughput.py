"""Closed-loop throughput of each call against the reference views, cell by cell, on one server.

The same cells run against the production serving (PostgreSQL + Redis) and the embedded default
(SQLite, daphne); a row's group says which (`embedded …` for the latter), so each ratio is taken
against the reference views of the same server in the same run.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from bench import calls
from bench.load import Call, Row, measure
from bench.report import BESIDE, ECHO, INSERT, LIMIT, SELECT
from bench.seed import PENDING, Seeds

CLIENTS = (1, 16, 64)
PAIRED = {("mcp", "get_inbox"), ("mcp", "get_task")}  # held to the reference app: measured beside it
Cell = tuple[str, str, Call, str]  # group, name, call, note


async def run(
    url: str,
    seeds: Seeds,
    *,
    seconds: float,
    full: bool,
    prefix: str = "",
    echo: str | None = None,
    classic: str | None = None,
    limit: str | None = None,
    clients: tuple[int, ...] = CLIENTS,
) -> list[Row]:
    """`full`: every cell; otherwise only those the issue's targets read (bench.targets). `limit`: the
    reference app's address (bench.server.limit_app), measured beside the hub at each client count."""
    rows = []
    headers = calls.bearer(seeds.operator_token)
    for count in clients:
        cells = _cells(url, seeds, count, full=full, echo=echo, classic=classic, limit=limit)
        reference = next((call for group, name, call, _ in cells if name == LIMIT), None)
        for group, name, call, note in cells:
            paired = reference is not None and (group, name) in PAIRED
            way = partial(_paired, reference=reference) if paired else measure
            row = await way(prefix + group, name, call, clients=count, seconds=seconds, headers=headers)
            row.note = note
            rows.append(row)
    return rows


async def _paired(
    group: str, name: str, call: Call, *, reference: Call, clients: int, seconds: float, headers: dict[str, str]
) -> Row:
    """A read measured in alternated rounds with the reference app (reference, read, read, reference:
    a drift in the machine's speed over the four rounds weighs on both alike), each round half the
    cell's time. The read's row holds both its rounds; its facts, the reference app's rate in the
    other two (bench.targets takes the read's ratio from them)."""
    half = seconds / 2
    before = await measure("reference", LIMIT, reference, clients=clients, seconds=half, headers=headers)
    reads = [await measure(group, name, call, clients=clients, seconds=half, headers=headers) for _ in range(2)]
    after = await measure("reference", LIMIT, reference, clients=clients, seconds=half, headers=headers)
    row = _joined(group, name, clients, reads)
    row.facts[BESIDE] = _joined("reference", LIMIT, clients, [before, after]).rate
    row.errors += before.errors + after.errors  # a failing reference makes no ratio
    return row


def _joined(group: str, name: str, clients: int, rounds: list[Row]) -> Row:
    row = Row(group, name, clients, seconds=sum(r.seconds for r in rounds))
    row.requests = sum(r.requests for r in rounds)
    row.errors = sum(r.errors for r in rounds)
    row.latencies = [latency for r in rounds for latency in r.latencies]
    return row


def _cells(
    url: str, seeds: Seeds, clients: int, *, full: bool, echo: str | None, classic: str | None, limit: str | None
) -> list[Cell]:
    pending = f"{PENDING} pending"
    send: Callable[[int], dict[str, str]] = lambda n: {"alias": f"load-{n}", "task": "bench"}  # noqa: E731
    inbox: Callable[[int], dict[str, str]] = lambda n: {"alias": f"inbox-{n}"}  # noqa: E731
    cells: list[Cell] = [
        ("reference", INSERT, calls.plain(url, "/bench/insert", post=True), ""),
        ("reference", SELECT, calls.plain(url, "/bench/select", post=False), ""),
        ("mcp", "send_task", calls.mcp(url, "send_task", send), ""),
        ("mcp", "get_inbox", calls.mcp(url, "get_inbox", inbox), pending),
        ("mcp", "ack_inbox", calls.acks(url, seeds.acks.get(clients, {}), clients), ""),
        ("mcp", "report_status", calls.mcp(url, "report_status", heartbeat), ""),
        ("mcp", "report_completion", calls.mcp(url, "report_completion", completion), ""),
        ("mcp", "get_task", calls.mcp(url, "get_task", calls.any_of(seeds.task_ids)), ""),
        ("mcp", "agent loop (5 calls)", calls.agent_loop(url, clients), ""),
        ("rest", "POST /api/v1/tasks", calls.rest_send(url), ""),
        ("rest", "GET /api/v1/sessions/{alias}/inbox", calls.rest_inbox(url), pending),
    ]
    if limit:  # the same 10 pending messages of the same aliases, read by the reference app
        cells.insert(2, ("reference", LIMIT, calls.mcp(limit, "get_inbox", inbox), pending))
    if not full:
        return cells
    extra: list[Cell] = [("mcp", "list_tasks", calls.mcp(url, "list_tasks", lambda n: {}), "")]
    if echo:
        extra.insert(0, ("reference", ECHO, calls.plain(echo, "/", post=True), ""))
    if classic:
        # The classic deployment, to choose the serving setup from measurements.
        extra += [
            ("wsgi", INSERT, calls.plain(classic, "/bench/insert", post=True), ""),
            ("wsgi", SELECT, calls.plain(classic, "/bench/select", post=False), ""),
            ("wsgi", "send_task", calls.mcp(classic, "send_task", lambda n: {"alias": f"w-{n}", "task": "x"}), ""),
            ("wsgi", "get_task", calls.mcp(classic, "get_task", calls.any_of(seeds.task_ids)), ""),
        ]
    return cells + extra


def heartbeat(client: int) -> dict[str, str]:
    return {"alias": f"status-{client}", "resume_id": f"status-resume-{client}", "status": "working"}


def completion(client: int) -> dict[str, object]:
    return {"alias": f"done-{client}", "task": "work nobody sent", "result": "done", "score": 7}
