"""What statements written as SQL (not compiled by the ORM) share, on both databases and drivers."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import connection


def stamp(moment: datetime) -> Any:
    """A time as a statement's parameter, in the form Django stores it (SQLite: naive UTC text;
    PostgreSQL: the aware datetime). No query: the vendor's adapter only."""
    return connection.ops.adapt_datetimefield_value(moment)


def placeholders(count: int) -> str:
    """`count` parameters in a SQL list: "%s, %s, ..." (both databases, both drivers)."""
    return ", ".join(["%s"] * count)
