"""The CommHub tools under their services' names, called the way every transport calls them.

`task_send(actor=a, alias="coder", task="t")` runs send_task through the tool registry, as MCP, REST
and the dashboard do: arguments checked and parsed by the tool's spec, the write limit counted, the
service called with typed values, and the contract's result object (`{"ok": True, ...}`) returned;
a refusal raises HubError. Service tests state behaviour through this public surface, so they keep
holding whatever the services' Python signatures become.
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


session_report = _tool("report_status")
completion_report = _tool("report_completion")
inbox_list = _tool("get_inbox")
inbox_ack = _tool("ack_inbox")
task_send = _tool("send_task")
message_send = _tool("send_message")
reply_send = _tool("send_reply")
task_ack = _tool("send_ack")
task_retry = _tool("retry_task")
task_cancel = _tool("cancel_task")
task_reassign = _tool("reassign_task")
task_get = _tool("get_task")
task_list = _tool("list_tasks")
session_list = _tool("get_all_status")
session_get = _tool("get_session_status")
completion_list = _tool("get_completions")
broadcast_send = _tool("broadcast")
# Beyond the contract: skills and the open pool.
agents_find = _tool("find_agents")
open_tasks = _tool("list_open_tasks")
task_claim = _tool("claim_task")
# Beyond the contract: questions to a person.
question_ask = _tool("ask_operator")
question_answer = _tool("answer_question")
question_list = _tool("list_questions")
# Beyond the contract: a task's thread.
task_thread = _tool("get_thread")
# Beyond the contract: approvals.
approval_list = _tool("list_approvals")
approval_decide = _tool("decide_approval")
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
node_report = _tool("report_node")
node_list = _tool("list_nodes")
