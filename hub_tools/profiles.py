"""Tool profiles: named sets of tools an MCP connection lists and may call (issue 24).

A model reads every tool tools/list names before it does anything, so a caller takes only what it
needs. Each profile holds the one before it: `contract` (the contract's 17 tools), `agent` (what an
agent at work calls beyond them: the open pool, a question to a person, a task's thread, and its
node's own report), `lead`
(what whoever dispatches and oversees other agents adds: answering questions, approvals, search,
what is scheduled) and
`all` (every tool, channels included: the default). A token has one (ApiToken.tool_profile); a
connection may narrow it (/mcp?tools=NAME), never widen it. Only MCP reads profiles: roles, not
profiles, say what a caller may do, so REST and the dashboard are not narrowed.
"""

from __future__ import annotations

from hub_agents.models import ToolProfile
from hub_tools.tools import BUILDS, CONTRACT_TOOLS, TOOLS

_AGENT = (
    *CONTRACT_TOOLS,
    "find_agents", "list_open_tasks", "claim_task",  # the open pool
    "ask_operator", "list_questions",  # a question about the task at hand, and its answer
    "get_thread",  # a task picked up from someone else
    "report_node",  # a machine's supervisor (commhub-agent node) reporting itself
    "node_command_ack",  # ... and answering the commands it is sent (node_command)
)  # fmt: skip
_LEAD = (*_AGENT, "answer_question", "list_approvals", "decide_approval", "search", "schedule_list")

# Narrowest first: a profile holds every profile before it. Asked on every tools/call: built once.
_FIXED: dict[str, frozenset[str]] = {
    ToolProfile.CONTRACT: frozenset(CONTRACT_TOOLS),
    ToolProfile.AGENT: frozenset(_AGENT),
    ToolProfile.LEAD: frozenset(_LEAD),
}
NAMES: tuple[str, ...] = tuple(ToolProfile.values)

_every: dict[int, frozenset[str]] = {}  # `all`, by the build of the specs it was read from


def tool_names(profile: str) -> frozenset[str]:
    """The tools of a profile (KeyError for a name that is none); `all`: every tool, as built now
    (read again after a rebuild). Asked on every tools/call: nothing is built per call."""
    if profile != ToolProfile.ALL:
        return _FIXED[profile]
    names = _every.get(BUILDS[0])
    if names is None:
        _every.clear()
        names = _every[BUILDS[0]] = frozenset(tool.name for tool in TOOLS)
    return names


def narrowed(held: str, asked: str | None) -> str:
    """The profile a connection gets: the one it asked for where that is within the one it holds,
    else the one it holds (a connection never widens its token's profile)."""
    if asked is None or NAMES.index(asked) >= NAMES.index(held):
        return held
    return asked
