"""Issue 29's targets (and those of issues 15 and 18 it keeps), each with its figure from this run's
rows, its bar, and met or missed.

Ratios are taken within the run: reads against the reference app (../shared/perf/limit_app.py, the
stack's limit for get_inbox) and writes against the one-INSERT view, on the same server setup at the
same number of clients. A target whose phase did not run says so instead of a verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bench import delivery, longpoll, scale
from bench.load import Row
from bench.report import BESIDE, EMBEDDED, INSERT, LIMIT, reference_of, reference_rate
from bench.throughput import CLIENTS

MET, MISSED = "met", "**missed**"
FULL_SCALE = 1_000_000  # tasks: the scale targets' size
RSS_SECONDS = 600  # the memory target's run
WRITES = [  # (group, name, what the target calls it): issue 29 wants each ≥ 1.2x the one-INSERT view
    ("mcp", "send_task", "send_task over /mcp"),
    ("mcp", "ack_inbox", "ack_inbox over /mcp"),
    ("mcp", "report_status", "report_status over /mcp"),
    ("mcp", "report_completion", "report_completion over /mcp"),
]
READS = [  # issue 29: ≥ 0.7x the reference app's get_inbox at 1 and 16 clients
    ("mcp", "get_inbox", "get_inbox (10 pending) over /mcp"),
    ("mcp", "get_task", "get_task over /mcp"),
]
REST = [  # issue 15: ≥ 1.0x their Django view
    ("rest", "POST /api/v1/tasks", "REST send_task (POST /api/v1/tasks)"),
    ("rest", "GET /api/v1/sessions/{alias}/inbox", "REST get_inbox (GET …/inbox)"),
]
CALLS = WRITES + READS + REST  # the embedded default is held to ≥ 0.7x its own views for each
READ_CLIENTS = (1, 16)
LOOP = "agent loop (5 calls)"
LOOP_CALLS = 5


@dataclass
class Target:
    what: str
    measured: str
    bar: str
    verdict: str


def evaluate(rows: list[Row]) -> list[Target]:
    return [
        *(_versus_limit(rows, group, name, what, bar=0.7) for group, name, what in READS),
        *(_versus_view(rows, group, name, what, bar=1.2) for group, name, what in WRITES),
        *(_versus_view(rows, group, name, what, bar=1.0) for group, name, what in REST),
        _loop(rows, "", bar=1.0),
        *_delivery(rows),
        *_scale(rows),
        _search(rows),
        *_longpoll(rows),
        *(_versus_view(rows, EMBEDDED + group, name, f"SQLite: {what}", bar=0.7) for group, name, what in CALLS),
        _loop(rows, EMBEDDED, bar=0.7),
        _memory(rows),
    ]


def table(targets: list[Target]) -> str:
    lines = ["| target | measured | bar | met? |", "|---|---|---|---|"]
    lines += [f"| {t.what} | {t.measured} | {t.bar} | {t.verdict} |" for t in targets]
    met = sum(t.verdict == MET for t in targets)
    missed = sum(t.verdict == MISSED for t in targets)
    lines += ["", f"Targets: {met} met, {missed} missed, {len(targets) - met - missed} not measured or partly."]
    return "\n".join(lines)


def _find(rows: list[Row], group: str, name: str, clients: int | None = None) -> Row | None:
    return next(
        (r for r in rows if r.group == group and r.name == name and (clients is None or r.clients == clients)), None
    )


def _not_measured(what: str, bar: str, phase: str) -> Target:
    return Target(what, f"not measured (`--only {phase}` not run)", bar, "not measured")


def _ratio(rows: list[Row], row: Row, *, calls: int = 1) -> tuple[float, str]:
    """The row's call rate over its reference view's (nan when the view has no figure), and how to
    say so; a reference with errors is named, as its rate is then not a rate of work done."""
    reference = reference_rate(rows, row, reference_of(row))
    ratio = row.rate * calls / reference if reference else math.nan
    group = (EMBEDDED if row.group.startswith(EMBEDDED) else "") + "reference"
    view = _find(rows, group, reference_of(row), row.clients)
    warn = f" (view: {view.errors} errors)" if view and view.errors else ""
    return ratio, f"{ratio:.2f}x{warn}"


def _versus_limit(rows: list[Row], group: str, name: str, what: str, *, bar: float) -> Target:
    what = f"{what} vs the reference app's get_inbox, {', '.join(map(str, READ_CLIENTS))} clients"
    wanted = f"≥ {bar:.1f}x each, 0 errors"
    found = [r for c in READ_CLIENTS if (r := _find(rows, group, name, c))]
    if not found:
        return _not_measured(what, wanted, "throughput")
    said, ok = [], len(found) == len(READ_CLIENTS)
    for row in found:
        beside = row.facts.get(BESIDE)  # measured in rounds alternated with the read (bench.throughput)
        limit = _find(rows, "reference", LIMIT, row.clients)
        rate = beside if beside is not None else (limit.rate if limit and not limit.errors else 0.0)
        ratio = row.rate / rate if rate else math.nan
        how = " beside it" if beside is not None else ""
        said.append(f"{row.clients}: {ratio:.2f}x ({row.rate:,.0f} vs {rate:,.0f} req/s{how})")
        ok = ok and ratio >= bar and not row.errors
    errors = sum(row.errors for row in found)
    return Target(what, " · ".join(said) + f"; {errors} errors", wanted, MET if ok else MISSED)


def _versus_view(rows: list[Row], group: str, name: str, what: str, *, bar: float) -> Target:
    view = "one-INSERT" if reference_of(Row(group, name, 1)) == INSERT else "one-SELECT"
    what = f"{what} vs the {view} view, {', '.join(map(str, CLIENTS))} clients"
    wanted = f"≥ {bar:.1f}x each, 0 errors"
    found = [r for c in CLIENTS if (r := _find(rows, group, name, c))]
    if not found:
        return _not_measured(what, wanted, "embedded" if group.startswith(EMBEDDED) else "throughput")
    ratios = [(row, *_ratio(rows, row)) for row in found]
    errors = sum(row.errors for row in found)
    said = " · ".join(f"{row.clients}: {text}" for row, _, text in ratios) + f"; {errors} errors"
    ok = len(found) == len(CLIENTS) and errors == 0 and all(ratio >= bar for _, ratio, _ in ratios)
    return Target(what, said, wanted, MET if ok else MISSED)


def _loop(rows: list[Row], prefix: str, *, bar: float) -> Target:
    what = f"{'SQLite: ' if prefix else ''}agent loop's call rate ({LOOP_CALLS} x loops/s) vs the one-INSERT view"
    wanted = f"≥ {bar:.1f}x at {', '.join(map(str, CLIENTS))} clients"
    found = [r for c in CLIENTS if (r := _find(rows, prefix + "mcp", LOOP, c))]
    if not found:
        return _not_measured(what, wanted, "embedded" if prefix else "throughput")
    # Only whole 5-call turns count: an idle or failed turn is quicker, and not the loop.
    turns = [Row(row.group, row.name, row.clients, row.requests - row.errors, 0, row.seconds) for row in found]
    ratios = [(row, *_ratio(rows, row, calls=LOOP_CALLS)) for row in turns]
    said = " · ".join(f"{row.clients}: {LOOP_CALLS * row.rate:,.0f}/s = {text}" for row, _, text in ratios)
    errors = sum(row.errors for row in found)
    said += f"; {errors} idle or failed turns" if errors else ""
    ok = len(found) == len(CLIENTS) and errors == 0 and all(ratio >= bar for _, ratio, _ in ratios)
    return Target(what, said, wanted, MET if ok else MISSED)


def _delivery(rows: list[Row]) -> list[Target]:
    targets = []
    label = delivery.label(delivery.TARGET_RATE)
    for name, where in (
        ("SSE new_task → agent", "over SSE"),
        ("websocket new_task → dashboard", "over the dashboard socket"),
    ):
        what = f"dispatch-to-delivery {where}, {label}"
        bar = "p99 < 50 ms, 0 lost"
        row = _find(rows, "delivery", f"{name} ({label})")
        if row is None:
            targets.append(_not_measured(what, bar, "delivery"))
            continue
        p99 = row.percentile(0.99)
        said = f"p99 {p99:,.1f} ms (p50 {row.percentile(0.5):,.1f}), {row.errors} lost of {row.requests}"
        targets.append(Target(what, said, bar, MET if p99 < 50 and row.errors == 0 else MISSED))
    return targets


def _scale(rows: list[Row]) -> list[Target]:
    checks: list[tuple[str, str, float]] = [
        ("get_inbox", "get_inbox", 5),
        ("get_task", "get_task", 5),
        ("list_tasks (with whole-scope stats)", "list_tasks with its stats (whole network)", 20),
        ("list_tasks alias=… (with stats)", "list_tasks alias=… with its stats", 20),
        ("get_all_status", f"get_all_status, all {scale.SESSIONS:,} sessions", 100),
        (scale.PAGED, f"get_all_status with limit={scale.PAGE} and cursor", 10),
    ]
    targets = []
    for name, said_as, limit in checks:
        what = f"{said_as}, at 1M tasks / {scale.SESSIONS // 1000}k sessions / 100k completions"
        bar = f"p99 < {limit:g} ms, 0 errors"
        row = _find(rows, "scale", name)
        if row is None:
            targets.append(_not_measured(what, bar, "scale"))
        elif not row.latencies:
            targets.append(Target(what, row.note, bar, "not measured"))
        else:
            targets.append(_scale_target(row, what, bar, limit))
    return targets


def _scale_target(row: Row, what: str, bar: str, limit: float) -> Target:
    p99, tasks = row.percentile(0.99), int(row.facts.get("tasks", 0))
    said = f"p99 {p99:,.1f} ms (p50 {row.percentile(0.5):,.1f}, {row.requests} calls), {row.errors} errors"
    ok = p99 < limit and row.errors == 0
    if tasks < FULL_SCALE:
        said += f"; at {tasks:,} tasks"
        return Target(what, said, bar, f"met at {tasks:,} tasks only" if ok else MISSED)
    return Target(what, said, bar, MET if ok else MISSED)


def _search(rows: list[Row]) -> Target:
    """Issue 18: a two-word search at 1M tasks + 1M messages."""
    what = "search, two words (hub_search), at 1M tasks + 1M messages"
    bar = "p99 < 50 ms, 0 errors"
    row = next((row for row in rows if row.group == "search"), None)
    if row is None:
        return _not_measured(what, bar, "search")
    p99 = row.percentile(0.99)
    said = f"p99 {p99:,.1f} ms (p50 {row.percentile(0.5):,.1f}, {row.requests} queries), {row.errors} errors"
    ok = p99 < 50 and row.errors == 0
    return Target(what, said + f"; {row.note}", bar, MET if ok else MISSED)


def _longpoll(rows: list[Row]) -> list[Target]:
    what = f"{longpoll.WAITERS:,} concurrent get_inbox long-polls on one process: each answered after its message"
    bar = "every one within 100 ms"
    cost_what = f"… and what they hold: the process's threads, its PostgreSQL connections (of {longpoll.WAITERS:,})"
    cost_bar = "no thread or connection per waiter: each < 100"
    row = _find(rows, "longpoll", longpoll.NAME)
    if row is None:
        return [_not_measured(what, bar, "longpoll"), _not_measured(cost_what, cost_bar, "longpoll")]
    worst = max(row.latencies, default=math.nan) * 1000
    said = (
        f"max {worst:,.1f} ms, p99 {row.percentile(0.99):,.1f}, p50 {row.percentile(0.5):,.1f}; "
        f"{row.errors} of {row.requests} not answered with their message"
    )
    facts = row.facts
    threads, backends = int(facts["threads waiting"]), int(facts["connections waiting"])
    cost = (
        f"threads: {int(facts['threads idle'])} idle, {int(facts['threads parked'])} with all {longpoll.WAITERS:,} "
        f"parked, ≤ {threads} while answering; connections: {int(facts['connections idle'])}, "
        f"{int(facts['connections parked'])}, ≤ {backends}"
    )
    return [
        Target(what, said, bar, MET if worst <= 100 and row.errors == 0 else MISSED),
        Target(cost_what, cost, cost_bar, MET if threads < 100 and backends < 100 else MISSED),
    ]


def _memory(rows: list[Row]) -> Target:
    what = "worker RSS over a mixed run (16 clients), after warm-up"
    bar = f"grows < 5 % over {RSS_SECONDS // 60} minutes"
    row = _find(rows, "memory", "mixed run, worker RSS")
    if row is None:
        return _not_measured(what, bar, "rss")
    growth, seconds = row.facts["growth %"], row.facts["seconds"]
    said = f"{row.note}; {row.errors} errors in {row.requests:,} calls"
    ok = growth < 5
    if seconds < RSS_SECONDS:
        return Target(what, said, bar, f"met over {seconds:.0f} s only" if ok else MISSED)
    return Target(what, said, bar, MET if ok else MISSED)
