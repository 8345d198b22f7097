"""The benchmark's table, with each figure's ratio to its reference point."""

from __future__ import annotations

from bench.load import Row

# Which reference each figure is compared with: writes with the one-INSERT view, reads with the
# one-SELECT view (the targets), delivery and scale with nothing.
WRITES = {"send_task", "ack_inbox", "report_status", "report_completion", "agent loop (5 calls)", "POST /api/v1/tasks"}
INSERT, SELECT, ECHO = "Django view: INSERT+SELECT", "Django view: SELECT", "raw ASGI echo"


def table(rows: list[Row], *, memory: tuple[list[float], list[float]]) -> str:
    reference = {(row.name, row.clients): row.rate for row in rows if row.group == "reference"}
    lines = [
        "| group | what | clients | req/s | p50 ms | p99 ms | errors | vs Django view | vs ASGI echo |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        base = INSERT if row.name in WRITES else SELECT
        versus_view = (
            _ratio(row.rate, reference.get((base, row.clients))) if row.group in ("mcp", "rest", "wsgi") else ""
        )
        versus_echo = _ratio(row.rate, reference.get((ECHO, row.clients))) if row.group != "scale" else ""
        rate = f"{row.rate:,.0f}" if row.group not in ("scale", "delivery") else ""
        lines.append(
            f"| {row.group} | {row.name}{f' ({row.note})' if row.note else ''} | {row.clients} | {rate} | "
            f"{row.percentile(0.5):.1f} | {row.percentile(0.99):.1f} | {row.errors} | {versus_view} | {versus_echo} |"
        )
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
