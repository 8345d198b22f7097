"""REST endpoints for tasks, the open pool, questions, approvals, messages and completions, each
running one tool (the contract's or the hub's own)."""

from __future__ import annotations

from hub_api.endpoints import Operation, route

urlpatterns = [
    route("tasks", Operation("get", "list_tasks"), Operation("post", "send_task", created=True), tag="tasks"),
    route("tasks/<str:task_id>", Operation("get", "get_task"), tag="tasks"),
    route("tasks/<str:task_id>/thread", Operation("get", "get_thread"), tag="tasks"),
    route("tasks/<str:task_id>/ack", Operation("post", "send_ack"), tag="tasks"),
    route("tasks/<str:task_id>/retry", Operation("post", "retry_task"), tag="tasks"),
    route("tasks/<str:task_id>/cancel", Operation("post", "cancel_task"), tag="tasks"),
    route("tasks/<str:task_id>/reassign", Operation("post", "reassign_task"), tag="tasks"),
    # Beyond the contract: the open pool (hub_fleet.pool).
    route("pool", Operation("get", "list_open_tasks"), tag="pool"),
    route("tasks/<str:task_id>/claim", Operation("post", "claim_task"), tag="pool"),
    # Beyond the contract: questions to a person (hub_tasks.questions).
    route("tasks/<str:task_id>/questions", Operation("post", "ask_operator", created=True), tag="questions"),
    route("questions", Operation("get", "list_questions"), tag="questions"),
    route("questions/<str:question_id>/answer", Operation("post", "answer_question"), tag="questions"),
    # Beyond the contract: approvals (hub_approvals). A held write answers 202 Accepted.
    route("approvals", Operation("get", "list_approvals"), tag="approvals"),
    route("approvals/<str:approval_id>/decide", Operation("post", "decide_approval"), tag="approvals"),
    route("messages", Operation("post", "send_message", created=True), tag="messages"),
    route("replies", Operation("post", "send_reply", created=True), tag="messages"),
    route("broadcasts", Operation("post", "broadcast", created=True), tag="messages"),
    route(
        "completions",
        Operation("get", "get_completions"),
        Operation("post", "report_completion", created=True),
        tag="completions",
    ),
]
