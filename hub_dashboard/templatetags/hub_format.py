"""How the dashboard shows times: one format on every page.

`{{ value|moment }}` renders `<time datetime="…" title="exact local time">3 min ago</time>` for a
datetime or the API's ISO string; `{{ start|lasted:end }}` a duration ("4 min 12 s"), up to now
when `end` is empty. Relative text keeps rows to one line; the hover keeps the exact time.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()

NONE = "—"


def _as_datetime(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def span_text(length: timedelta | float) -> str:
    """A duration as people say it: "42 s", "4 min 12 s", "2 h 5 min", "3 d 4 h"."""
    seconds = max(0, int(length.total_seconds() if isinstance(length, timedelta) else length))
    minutes, secs = divmod(seconds, 60)
    hours, mins = divmod(minutes, 60)
    days, hrs = divmod(hours, 24)
    if days:
        return f"{days} d {hrs} h" if hrs else f"{days} d"
    if hours:
        return f"{hours} h {mins} min" if mins else f"{hours} h"
    if minutes:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    return f"{secs} s"


def relative_text(moment: datetime, now: datetime) -> str:
    delta = (now - moment).total_seconds()
    if abs(delta) < 10:
        return "just now"
    # The largest unit only: a list row has room for "3 min ago", not for "3 min 12 s ago".
    seconds = abs(delta)
    for size, unit in ((86_400, "d"), (3_600, "h"), (60, "min"), (1, "s")):
        if seconds >= size:
            amount = f"{int(seconds // size)} {unit}"
            break
    return f"{amount} ago" if delta > 0 else f"in {amount}"


def exact_text(moment: datetime) -> str:
    local = timezone.localtime(moment)
    return local.strftime("%Y-%m-%d %H:%M:%S %Z")


@register.filter
def moment(value: object) -> SafeString | str:
    """A point in time: relative text, the exact local time on hover, machine-readable datetime."""
    when = _as_datetime(value)
    if when is None:
        return NONE
    return format_html(
        '<time datetime="{}" title="{}">{}</time>',
        when.isoformat(),
        exact_text(when),
        relative_text(when, timezone.now()),
    )


@register.filter
def lasted(start: object, end: object = None) -> str:
    """How long from `start` to `end` (to now if `end` is empty); empty text without a start."""
    began = _as_datetime(start)
    if began is None:
        return ""
    ended = _as_datetime(end) or timezone.now()
    return span_text(ended - began)


@register.simple_tag
def zone_name() -> str:
    """The zone the dashboard's local times are in, for labels such as the chart's hours."""
    return timezone.localtime(timezone.now()).strftime("%Z")


@register.simple_tag
def waits(row: dict[str, object]) -> list[tuple[str, str]]:
    """The durations that matter for a task or an attempt row: queued for (until picked up, or so far),
    ran for (running for, while it runs)."""
    delivered, started = _as_datetime(row.get("delivered_at")), _as_datetime(row.get("started_at"))
    ended = _as_datetime(row.get("completed_at") or row.get("ended_at"))
    now = timezone.now()
    spans = []
    if delivered is not None:
        picked = started or ended
        spans.append(("Queued for", span_text((picked or now) - delivered)))
    if started is not None:
        spans.append(("Ran for" if ended else "Running for", span_text((ended or now) - started)))
    return spans


@register.filter
def last_line(text: str | None) -> str:
    """The last line with something on it: where a traceback names its error."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else ""


@register.filter
def tail(text: str | None, count: int = 15) -> str:
    """The last `count` lines of an agent's reported output."""
    return "\n".join((text or "").rstrip().splitlines()[-int(count) :])


@register.filter
def node_anchor(node_id: str | None) -> str:
    """The id of a node's entry in the fleet page's node strip, for any node_id (which may hold any
    character): agents' cards link to it."""
    return "node-" + hashlib.sha256((node_id or "").encode()).hexdigest()[:12]


@register.filter
def percent_of(part: int | None, whole: int | None) -> int:
    """`part` as a whole percentage of `whole`, 0 to 100 (a node's slots in use)."""
    if not part or not whole:
        return 0
    return max(0, min(100, round(100 * part / whole)))
