"""The CommHub tools, the contract's 17 (CONTRACT_TOOLS) then the hub's own, gathered from the spec
modules by domain (MODULES: fleet_tools, inbox_tools, task_tools, ... each exposing `specs()`).

A spec names each argument with its Param (hub_tools.params: its JSON Schema and its parser, from
one statement of its limit; the arguments several tools share in hub_tools.args), the service it
calls and how the service's answer renders as the contract's result object (hub_tools.results).
Argument names are the services' keyword names (tests/hub_tools/test_spec_signatures.py). Specs are
built from the `limits` modules and hub_core.validate, the TRANSITIONS table and TextChoices, and the
settings (the offline threshold), so the MCP inputSchema, the OpenAPI schema (hub_api) and the
checks cannot disagree. `rebuild()` builds them again (a changed setting does it itself). `Tool`
itself, and the door every call passes (`Tool.execute`), are in hub_tools.tool. Adding a tool is
adding its spec to its domain's module: nothing here changes.
"""

from __future__ import annotations

from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver

from hub_agents.actors import Actor
from hub_tools import (
    approval_tools,
    budget_tools,
    cap_tools,
    channel_tools,
    fleet_tools,
    inbox_tools,
    node_tools,
    question_tools,
    schedule_tools,
    search_tools,
    task_tools,
)
from hub_tools.tool import Tool

# The contract's 17 tools, in its order: tools/list names them first, unchanged; the hub's own tools
# (the open pool, ...) follow them, so a client written against the contract sees what it expects.
CONTRACT_TOOLS: tuple[str, ...] = (
    "report_status", "report_completion", "get_inbox", "ack_inbox", "send_task", "send_message", "send_reply",
    "send_ack", "retry_task", "cancel_task", "reassign_task", "get_task", "list_tasks", "get_all_status",
    "get_session_status", "get_completions", "broadcast",
)  # fmt: skip


# The spec modules, by domain. tools/list names the contract's tools first, in CONTRACT_TOOLS' order,
# then the hub's own in these modules' order, each module's in its own: a new tool is added to its
# domain's module alone, and lands after the tools added before it.
MODULES = (
    fleet_tools,  # report_status and the sessions; then the open pool
    inbox_tools,
    question_tools,
    approval_tools,
    task_tools,  # tasks, messages, replies, completions; then a task's thread
    channel_tools,
    search_tools,
    node_tools,
    schedule_tools,
    cap_tools,
    budget_tools,
)


def _build() -> list[Tool]:
    """Every tool's spec, from the limits, tables and settings as they are now: the contract's first."""
    found = [tool for module in MODULES for tool in module.specs()]
    by_name = {tool.name: tool for tool in found}
    assert len(by_name) == len(found), "two specs share a name"
    return [by_name[name] for name in CONTRACT_TOOLS] + [tool for tool in found if tool.name not in CONTRACT_TOOLS]


TOOLS: list[Tool] = []
TOOLS_BY_NAME: dict[str, Tool] = {}
BUILDS = [0]  # how many times the specs were built: what is derived from them is derived again after one


def rebuild() -> None:
    """Build every spec again, in place (importers keep their references): after a limit changed."""
    built = _build()
    TOOLS[:] = built
    TOOLS_BY_NAME.clear()
    TOOLS_BY_NAME.update((tool.name, tool) for tool in built)
    BUILDS[0] += 1


@receiver(setting_changed)
def _setting_changed(*, setting: str, **kwargs: Any) -> None:
    if setting == "COMMHUB_OFFLINE_AFTER_SECONDS":
        rebuild()


def invoke(name: str, actor: Actor, arguments: dict[str, Any]) -> Any:
    """Run one tool by name and answer the service's result (the dashboard's writes, which render it
    their own way): the same door, checks and write limit as MCP and REST."""
    return TOOLS_BY_NAME[name].execute(actor, arguments)


rebuild()
