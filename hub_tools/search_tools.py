"""The search tools' specs (issue 18), gathered by hub_tools.tools after the hub's other own tools."""

from __future__ import annotations

from hub_tools.tool import Tool


def specs() -> list[Tool]:
    return []
