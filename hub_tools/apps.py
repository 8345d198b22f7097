from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.apps import AppConfig

if TYPE_CHECKING:
    from hub_agents.actors import Actor


class HubToolsConfig(AppConfig):
    name = "hub_tools"
    verbose_name = "Tools"

    def ready(self) -> None:
        # Approvals run a held call later through this registry's door, and check a rule's tool
        # against the specs that say `gateable`: hub_approvals' port (it never imports this layer).
        from hub_approvals.port import tool_registry_install

        tool_registry_install(run=_run_held, gateable=_gateable)


def _run_held(caller: Actor, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """An approved call, run through the same door as every call, as its caller."""
    from hub_tools.tools import TOOLS_BY_NAME

    return TOOLS_BY_NAME[tool].run(caller, arguments, approved=True)


def _gateable() -> tuple[str, ...]:
    from hub_tools.tools import TOOLS

    return tuple(tool.name for tool in TOOLS if tool.gateable)
