"""Geometry of the completions chart (tasks ended per hour), drawn as inline SVG by the template."""

from __future__ import annotations

import math
from typing import Any

from django.utils import timezone

BAR, GAP, HEIGHT = 20, 4, 120
AXIS = 30  # room left of the bars for the y-axis labels
MIN_TOP = 4  # one task must not fill the whole height: the scale starts at 0 to 4
NICE_STEPS = (1, 2, 5)


def nice_scale(peak: int, *, ticks: int = 4) -> tuple[int, int]:
    """(step, top) of a y-axis from 0 with at most `ticks` steps of 1, 2 or 5 times 10^n, top >= peak."""
    peak = max(peak, MIN_TOP)
    magnitude = 1
    while True:
        for base in NICE_STEPS:
            step = base * magnitude
            if math.ceil(peak / step) <= ticks:
                return step, step * math.ceil(peak / step)
        magnitude *= 10


def bar_chart(hours: list[dict[str, Any]]) -> dict[str, Any]:
    """Bars for each hour (replied stacked under failed), a y-axis with ticks, hour labels in local time."""
    peak = max([row["replied"] + row["failed"] for row in hours] + [0])
    step, top = nice_scale(peak)
    bars = []
    for index, row in enumerate(hours):
        replied_h = round(HEIGHT * row["replied"] / top)
        failed_h = round(HEIGHT * row["failed"] / top)
        bars.append(
            {
                "x": AXIS + index * (BAR + GAP),
                "replied_y": HEIGHT - replied_h,
                "replied_h": replied_h,
                "failed_y": HEIGHT - replied_h - failed_h,
                "failed_h": failed_h,
                "label": timezone.localtime(row["hour"]).strftime("%H:00"),
                "replied": row["replied"],
                "failed": row["failed"],
            }
        )
    ticks = [{"value": value, "y": HEIGHT - round(HEIGHT * value / top)} for value in range(0, top + 1, step)]
    return {
        "bars": bars,
        "ticks": ticks,
        "axis": AXIS,
        "width": AXIS + len(hours) * (BAR + GAP),
        "height": HEIGHT,
        "bar": BAR,
        "peak": peak,
        "top": top,
        "zone": timezone.localtime(timezone.now()).strftime("%Z"),
    }
