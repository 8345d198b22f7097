"""The benchmark's table, with each figure's ratio to its reference point."""

from __future__ import annotations

from bench.load import Row

# Which reference each figure is compared with: writes with the one-INSERT view, reads with the
# one-SELECT view (the targets), delivery and scale with nothing.
WRITES = {"send_task", "ack_inbox", "report_status", "report_completion", "agent loop (5 calls)", "POST /api/v1/tasks"}
INSERT, SELECT, ECHO = "Django view: INSERT+SELECT", "Django view: SELECT", "raw ASGI echo"
# ../shared/perf/limit_app.py: get_inbox as one prepared SELECT on a raw ASGI app (issue 29's yardstick).
LIMIT = "limit app: get_inbox"
BESIDE = "limit app req/s beside it"  # a paired read's fact: the reference app's rate in its alternated rounds
EMBEDDED = "embedded "  # the group prefix of rows measured on the embedded default (SQLite, daphne)
COMPARED = ("mcp", "rest", "wsgi")


def reference_of(row: Row) -> str:
    return INSERT if row.name in WRITES else SELECT


def reference_rate(rows: list[Row], row: Row, name: str) -> float | None:
    """The rate of reference view `name` on the server `row` was measured on, at the same clients."""
    group = EMBEDDED + "reference" if row.group.startswith(EMBEDDED) else "reference"
    return next((r.rate for r in rows if r.group == group and r.name == name and r.clients == row.clients), None)


def table(rows: list[Row], *, memory: tuple[list[float], list[float]] | None) -> str:
    lines = [
        "| group | what | clients | req/s | p50 ms | p99 ms | errors | vs Django view | vs limit app | vs ASGI echo |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        kind = row.group.removeprefix(EMBEDDED)
        versus_view = _ratio(row.rate, reference_rate(rows, row, reference_of(row))) if kind in COMPARED else ""
        throughput = kind in ("reference", *COMPARED)
        reads = kind in COMPARED and reference_of(row) == SELECT
        versus_limit = _ratio(row.rate, row.facts.get(BESIDE) or reference_rate(rows, row, LIMIT)) if reads else ""
        versus_echo = _ratio(row.rate, reference_rate(rows, row, ECHO)) if throughput else ""
        rate = f"{row.rate:,.0f}" if throughput or kind == "memory" else ""
        lines.append(
            f"| {row.group} | {row.name}{f' ({row.note})' if row.note else ''} | {row.clients} | {rate} | "
            f"{row.percentile(0.5):.1f} | {row.percentile(0.99):.1f} | {row.errors} | "
            f"{versus_view} | {versus_limit} | {versus_echo} |"
        )
    if memory:
        before, after = memory
        lines.append("")
        lines.append(
            "Server worker RSS, MB: before the load "
            + ", ".join(f"{mb:.0f}" for mb in before)
            + "; after it "
            + ", ".join(f"{mb:.0f}" for mb in after)
        )
    return "\n".join(lines)


def _ratio(value: float, base: float | None) -> str:
    return f"{value / base:.2f}x" if base else ""
