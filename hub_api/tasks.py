"""REST endpoints for tasks, messages and completions, each running one of the contract's tools."""

from __future__ import annotations

from hub_api.endpoints import Operation, route

urlpatterns = [
    route("tasks", Operation("get", "list_tasks"), Operation("post", "send_task", created=True), tag="tasks"),
    route("tasks/<str:task_id>", Operation("get", "get_task"), tag="tasks"),
    route("tasks/<str:task_id>/ack", Operation("post", "send_ack"), tag="tasks"),
    route("tasks/<str:task_id>/retry", Operation("post", "retry_task"), tag="tasks"),
    route("tasks/<str:task_id>/cancel", Operation("post", "cancel_task"), tag="tasks"),
    route("tasks/<str:task_id>/reassign", Operation("post", "reassign_task"), tag="tasks"),
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
