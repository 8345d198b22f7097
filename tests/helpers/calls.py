"""The CommHub tools under their own names, called the way every transport calls them.

`send_task(actor=a, alias="coder", task="t")` runs send_task through the tool registry, as MCP, REST
and the dashboard do: arguments checked and parsed by the tool's spec, the write limit counted, the
service called with typed values, and the contract's result object (`{"ok": True, ...}`) returned;
a refusal raises HubError. Service tests state behaviour through this public surface, so they keep
holding whatever the services' Python signatures become. `send_task_id` is send_task from "lead" to
"coder" answering just the new task's id, as most task tests need it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hub_agents.actors import Actor
from hub_tools.tools import TOOLS_BY_NAME

Call = Callable[..., dict[str, Any]]


def _tool(name: str) -> Call:
    def call(*, actor: Actor, **arguments: Any) -> dict[str, Any]:
        return TOOLS_BY_NAME[name].run(actor, arguments)

    call.__name__ = call.__qualname__ = name
    return call


report_status = _tool("report_status")
report_completion = _tool("report_completion")
get_inbox = _tool("get_inbox")
ack_inbox = _tool("ack_inbox")
send_task = _tool("send_task")
send_message = _tool("send_message")
send_reply = _tool("send_reply")
send_ack = _tool("send_ack")
retry_task = _tool("retry_task")
cancel_task = _tool("cancel_task")
reassign_task = _tool("reassign_task")
get_task = _tool("get_task")
list_tasks = _tool("list_tasks")
get_all_status = _tool("get_all_status")
get_session_status = _tool("get_session_status")
get_completions = _tool("get_completions")
broadcast = _tool("broadcast")
# Beyond the contract: skills and the open pool.
find_agents = _tool("find_agents")
list_open_tasks = _tool("list_open_tasks")
claim_task = _tool("claim_task")
# Beyond the contract: questions to a person.
ask_operator = _tool("ask_operator")
answer_question = _tool("answer_question")
list_questions = _tool("list_questions")
# Beyond the contract: a task's thread.
get_thread = _tool("get_thread")
# Beyond the contract: approvals.
list_approvals = _tool("list_approvals")
decide_approval = _tool("decide_approval")
# Beyond the contract: channels.
channel_create = _tool("channel_create")
channel_list = _tool("channel_list")
channel_join = _tool("channel_join")
channel_leave = _tool("channel_leave")
channel_info = _tool("channel_info")
channel_configure = _tool("channel_configure")
channel_post = _tool("channel_post")
channel_read = _tool("channel_read")
# Beyond the contract: nodes.
report_node = _tool("report_node")
list_nodes = _tool("list_nodes")
node_command = _tool("node_command")
node_command_ack = _tool("node_command_ack")
node_commands = _tool("node_commands")
# Beyond the contract: recurring schedules.
schedule_create = _tool("schedule_create")
schedule_list = _tool("schedule_list")
schedule_pause = _tool("schedule_pause")
schedule_resume = _tool("schedule_resume")
schedule_run_now = _tool("schedule_run_now")
schedule_delete = _tool("schedule_delete")
# Beyond the contract: concurrency caps.
cap_set = _tool("cap_set")
cap_list = _tool("cap_list")
cap_delete = _tool("cap_delete")
# Beyond the contract: budgets.
budget_set = _tool("budget_set")
budget_list = _tool("budget_list")
budget_delete = _tool("budget_delete")


def send_task_id(actor: Actor, task: str, *, alias: str = "coder", from_session: str = "lead", **extra: Any) -> str:
    """The id of the task `task` that `actor` sends, as `from_session`, to `alias` (send_task's `task_id`);
    `extra` are send_task's other arguments (ttl_seconds, depends_on, ...). A module sending one text
    binds it: `send = partial(send_task_id, task="write quicksort")`."""
    return send_task(actor=actor, alias=alias, task=task, from_session=from_session, **extra)["task_id"]
