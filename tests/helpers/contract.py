"""The contract's 17 tools and the hub's own after them, as tests check a tools/list.

The contract's names live once, in hub_tools.tools.CONTRACT_TOOLS; the hub's own tools are named
here, each a decision of an issue, so that a tool nobody meant to publish fails the listing tests
instead of slipping into every client's tools/list.
"""

from __future__ import annotations

from collections.abc import Sequence

from hub_tools.tools import CONTRACT_TOOLS

# Issue 17: skills and the open pool (hub_fleet.pool).
POOL_TOOLS = ("find_agents", "list_open_tasks", "claim_task")
# Issue 17: questions to a person (hub_tasks.questions).
QUESTION_TOOLS = ("ask_operator", "answer_question", "list_questions")
# Issue 17: approvals (hub_approvals).
APPROVAL_TOOLS = ("list_approvals", "decide_approval")
# Issue 18: a task's thread (hub_tasks.selectors.task_thread).
THREAD_TOOLS = ("get_thread",)
# Issue 18: channels (hub_channels).
CHANNEL_TOOLS = (
    "channel_create", "channel_list", "channel_join", "channel_leave", "channel_info", "channel_configure",
    "channel_post", "channel_read",
)  # fmt: skip
# Issue 18: search (hub_search).
SEARCH_TOOLS = ("search",)
# Issue 25: a machine's supervisor (commhub-agent node) reports itself; the fleet lists the machines.
NODE_TOOLS = ("report_node", "list_nodes")
# Issue 28: commands to nodes, sent by owners and admins, answered by the node.
NODE_COMMAND_TOOLS = ("node_command", "node_command_ack", "node_commands")
# Issue 28: recurring schedules (hub_schedules).
SCHEDULE_TOOLS = (
    "schedule_create", "schedule_list", "schedule_pause", "schedule_resume", "schedule_run_now", "schedule_delete",
)  # fmt: skip
# Issue 28: concurrency caps (hub_fleet.caps).
CAP_TOOLS = ("cap_set", "cap_list", "cap_delete")
# Issue 28: budgets (hub_fleet.budgets).
BUDGET_TOOLS = ("budget_set", "budget_list", "budget_delete")
EXTENSION_TOOLS = (
    *POOL_TOOLS, *QUESTION_TOOLS, *APPROVAL_TOOLS, *THREAD_TOOLS, *CHANNEL_TOOLS, *SEARCH_TOOLS, *NODE_TOOLS,
    *SCHEDULE_TOOLS, *NODE_COMMAND_TOOLS, *CAP_TOOLS, *BUDGET_TOOLS,
)  # fmt: skip
# The extensions that only read (readOnlyHint true); the others write.
READ_ONLY_EXTENSIONS = frozenset(
    {"find_agents", "list_open_tasks", "list_questions", "list_approvals", "get_thread", "search"}
)
READ_ONLY_EXTENSIONS |= {"channel_list", "channel_info", "channel_read", "list_nodes", "schedule_list"}
READ_ONLY_EXTENSIONS |= {"node_commands", "cap_list", "budget_list"}


def assert_contract_first(names: Sequence[str]) -> None:
    """The contract's 17 tools come first, unchanged and in its order; each tool after them is a
    named extension, listed once."""
    assert tuple(names[: len(CONTRACT_TOOLS)]) == CONTRACT_TOOLS, list(names)
    extensions = list(names[len(CONTRACT_TOOLS) :])
    assert set(extensions) <= set(EXTENSION_TOOLS), sorted(set(extensions) - set(EXTENSION_TOOLS))
    assert len(set(extensions)) == len(extensions), extensions
