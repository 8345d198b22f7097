"""The tool registry's port. A held call runs later, as its caller, through the door every call
passes (the registry's `Tool.run`), and a rule names only a tool whose calls a rule may hold (its
spec says `gateable`). The registry is a layer above this app, which never imports it: hub_tools
plugs in here in AppConfig.ready(), as hub_events plugs the event log into hub_core.events.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hub_agents.actors import Actor

# Runs a held call as its caller: (caller, tool name, arguments) -> the tool's result object.
Runner = Callable[[Actor, str, dict[str, Any]], dict[str, Any]]
# The tools a rule may hold, in the registry's order.
Gateable = Callable[[], tuple[str, ...]]


@dataclass
class _Registry:
    run: Runner | None = None
    gateable: Gateable | None = None


_registry = _Registry()


def tool_registry_install(*, run: Runner, gateable: Gateable) -> None:
    """The port: the tool registry (hub_tools) plugs in here in AppConfig.ready()."""
    _registry.run, _registry.gateable = run, gateable


def _installed() -> _Registry:
    if _registry.run is None or _registry.gateable is None:
        raise RuntimeError("No tool registry installed: add hub_tools to INSTALLED_APPS (it plugs in at start-up).")
    return _registry


def held_call_run(caller: Actor, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run an approved call as its caller, through the same door as every call: its result object."""
    run = _installed().run
    assert run is not None
    return run(caller, tool, arguments)


def gateable_tools() -> tuple[str, ...]:
    """The tools whose calls a rule may hold (a spec declares it: `gateable`)."""
    gateable = _installed().gateable
    assert gateable is not None
    return gateable()


def tool_choices() -> list[tuple[str, str]]:
    """A rule's tool, as the forms offer it (the dashboard's and the admin's)."""
    return [(name, name) for name in gateable_tools()]
