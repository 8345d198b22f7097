"""Every tool's spec and the service it calls agree: the door calls `service(actor=..., **parsed)` with
one keyword per parameter, so a parameter the service lacks would only fail when called, and a
keyword the service needs that no parameter gives likewise. A required parameter has no default in
the service: a default there would be dead, and would read as optional to whoever calls the service
directly. And the door itself (Tool) names no particular tool or message type."""

from __future__ import annotations

import inspect
import re

import pytest

from hub_tasks.models import InboxMessage
from hub_tools.replays import KEY
from hub_tools.tool import Tool
from hub_tools.tools import TOOLS, TOOLS_BY_NAME
from hub_tools.webhook_tools import WEBHOOK_TOOLS

SPECS = [*TOOLS, *WEBHOOK_TOOLS.values()]


def keywords(tool) -> dict[str, inspect.Parameter]:
    signature = inspect.signature(tool.service)
    assert all(
        parameter.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        for parameter in signature.parameters.values()
    ), f"{tool.name}: its service takes only named arguments"
    return {name: parameter for name, parameter in signature.parameters.items() if name != "actor"}


@pytest.mark.parametrize("tool", SPECS, ids=lambda tool: tool.name)
def test_a_tools_parameters_are_its_services_keywords(tool) -> None:
    assert "actor" in inspect.signature(tool.service).parameters, f"{tool.name}: the door passes actor="
    taken = keywords(tool)
    assert set(tool.params) - {KEY} <= set(taken), f"{tool.name}: the service lacks {set(tool.params) - set(taken)}"
    # What the service takes beyond the spec is no tool argument (the dashboard's `watching`, a partial's
    # `active`): the door never passes it, so it must have a default.
    extra = {name for name in set(taken) - set(tool.params) if taken[name].default is inspect.Parameter.empty}
    assert not extra, f"{tool.name}: the service needs {extra}, which no argument gives"


@pytest.mark.parametrize("tool", SPECS, ids=lambda tool: tool.name)
def test_a_required_parameter_has_no_default_in_the_service(tool) -> None:
    defaults = {name for name, parameter in keywords(tool).items() if parameter.default is not inspect.Parameter.empty}
    assert defaults.isdisjoint(tool.required), f"{tool.name}: required, yet defaulted: {defaults & set(tool.required)}"


def test_the_door_names_no_particular_tool_or_message_type() -> None:
    """Tool holds what every tool shares (arguments, write limit, guard, caller check, approval gate,
    tracing): a rule of one tool lives in that tool's service, where a reader of the domain finds it."""
    door = inspect.getsource(Tool)
    named = sorted(name for name in {*TOOLS_BY_NAME, *WEBHOOK_TOOLS} if re.search(rf"\b{name}\b", door))
    types = sorted(
        kind for kind in InboxMessage.Type.values if re.search(rf"['\"]{kind}['\"]|Type\.{kind.upper()}", door)
    )
    assert (named, types) == ([], [])
    assert "InboxMessage" not in door
