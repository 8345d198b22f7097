"""The runtimes a node can run, by the name an agent's `runtime` key gives. Each is imported when
first used: the claude adapter needs the Claude Agent SDK, which a codex-only machine may not have."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from commhub_agent.node.runtime import Runtime


def _loader(module: str, name: str) -> Callable[[], type[Runtime]]:
    return lambda: getattr(import_module(f"commhub_agent.node.runtimes.{module}"), name)


RUNTIMES: dict[str, Callable[[], type[Runtime]]] = {
    "claude": _loader("claude", "ClaudeRuntime"),
    "codex": _loader("codex", "CodexRuntime"),
    "command": _loader("command", "CommandRuntime"),
}
