"""The 17 CommHub tools: one spec each, a thin adapter over one service or selector.

Argument names are the services' keyword names, so a call is `service(actor=..., **arguments)`;
every rule lives in the service. Each spec is built from the single statement of each limit (the
`limits` modules, hub_core.validate), from the TRANSITIONS table and TextChoices, and from the
settings (the offline threshold), so the MCP inputSchema, the OpenAPI schema (hub_api) and the
services' checks cannot disagree. `rebuild()` builds them again (a changed setting does it itself).

`Tool.run` is the one door every operation passes, whatever the transport (MCP, REST, dashboard):
the write rate limit is counted there, so no transport can forget it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from hub_agents import limits as agent_limits
from hub_agents.actors import Actor
from hub_agents.models import SessionStatus
from hub_agents.selectors import session_list
from hub_core import validate
from hub_core.errors import HubError, invalid_argument
from hub_core.formats import duration
from hub_fleet.selectors import RECENT_COMPLETIONS, session_get
from hub_fleet.services import session_report
from hub_tasks import limits
from hub_tasks.models import TRANSITIONS, Move, Priority, TaskStatus
from hub_tasks.selectors import completion_list
from hub_tasks.services import (
    broadcast_send,
    completion_report,
    inbox_ack,
    inbox_list,
    message_send,
    reply_send,
    task_ack,
    task_cancel,
    task_get,
    task_list,
    task_reassign,
    task_retry,
    task_send,
)
from hub_tools.ratelimit import write_rate_check
from hub_tools.schema import (
    Schema,
    counts,
    integer,
    json_string_array,
    nullable,
    number,
    required_string,
    result,
    rows,
    string,
    string_list,
)

# Versions before 2025-06-18 know neither tool titles nor output schemas.
_TITLES_SINCE = "2025-06-18"


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    params: dict[str, Schema]
    required: tuple[str, ...]
    service: Callable[..., dict[str, Any]]
    output: Schema
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False

    @property
    def input_properties(self) -> dict[str, Schema]:
        return {
            name: required_string(schema) if name in self.required else schema for name, schema in self.params.items()
        }

    def definition(self, version: str) -> dict[str, Any]:
        hints: dict[str, Any] = {"readOnlyHint": self.read_only, "openWorldHint": False}
        if not self.read_only:
            hints |= {"destructiveHint": self.destructive, "idempotentHint": self.idempotent}
        definition: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": {
                "type": "object",
                "properties": self.input_properties,
                "required": list(self.required),
                "additionalProperties": False,
            },
            "annotations": {**hints, "title": self.title},
        }
        if version >= _TITLES_SINCE:
            definition["title"] = self.title
            definition["outputSchema"] = self.output
        return definition

    def run(self, actor: Actor, arguments: dict[str, Any]) -> dict[str, Any]:
        """The service's result object; HubError for a refusal, unknown and missing arguments included."""
        unknown = sorted(set(arguments) - set(self.params))
        if unknown:
            raise invalid_argument(
                ", ".join(unknown), f"is not an argument of {self.name} (its arguments: {', '.join(self.params)})"
            )
        missing = [name for name in self.required if name not in arguments]
        if missing:
            raise invalid_argument(", ".join(missing), "is required")
        if not self.read_only:
            write_rate_check(actor)
        return self.service(actor=actor, **arguments)

    def call(self, actor: Actor, arguments: dict[str, Any]) -> dict[str, Any]:
        """The result object either way: a refusal becomes `{"ok": false, ...}` for the model to read."""
        try:
            return self.run(actor, arguments)
        except HubError as refusal:
            return refusal.as_result()


def _text(description: str, limit: int | None = None) -> Schema:
    return string(description, max_length=validate.TEXT_MAX if limit is None else limit)


def _reply_outcomes() -> list[str]:
    """How a reply may end its task (the REPLY row of TRANSITIONS), in TaskStatus order."""
    _, outcomes = TRANSITIONS[Move.REPLY]
    return [status for status in TaskStatus.values if status in outcomes]


def _build() -> list[Tool]:
    """Every tool's spec, from the limits, tables and settings as they are now."""
    ID = validate.ID_MAX
    outcomes = _reply_outcomes()
    reply_outcomes = f"{', '.join(outcomes[:-1])} or {outcomes[-1]}" if len(outcomes) > 1 else outcomes[0]
    offline = duration(settings.COMMHUB_OFFLINE_AFTER_SECONDS)
    retry_ttl = duration(int(limits.RETRY_TTL.total_seconds()), one="")
    ALIAS = string("The agent's alias: its display name in the network.", max_length=ID)
    NETWORK_ID = string(
        "Network id (net_…). A network token is bound to its network and may omit it; a user token in "
        "several networks names the one to act in.",
        max_length=ID,
    )
    FROM_SESSION = string('Who is acting, as others will see it (default "hub").', max_length=ID)
    TASK_ID = string("The task's id (task_id from send_task or list_tasks).", max_length=ID)
    SCORE = number(f"Self-assessed quality, 0 to {agent_limits.SCORE_MAX}.", minimum=0, maximum=agent_limits.SCORE_MAX)
    SESSION_STATUS = string(f"Filter by status; offline means no heartbeat for {offline}.", enum=SessionStatus.values)
    SERVER_FILTER = string("Only sessions that reported this `server`.", max_length=ID)
    DELIVERY = {
        "message_id": {"type": "string"},
        "session_status": {**nullable("string"), "description": "the receiver's status; null if it never reported"},
    }

    return [
        Tool(
            name="report_status",
            title="Report status (heartbeat)",
            description=(
                "Report this agent's status; it doubles as the heartbeat, so call it about every 3 minutes "
                f"and whenever your status changes. Sessions silent for {offline} read as offline. Reporting "
                "`working` with `task` set to a task_id (or its exact text) marks that task running. Needs a "
                "network token. Returns inbox_count: how many messages wait for you (fetch them with get_inbox)."
            ),
            params={
                "resume_id": _text("Stable id of this agent session; a new one replaces the alias's old session.", ID),
                "alias": ALIAS,
                "status": string("Your status now.", enum=SessionStatus.values),
                "task": _text("What you are working on: a task_id, or a description."),
                "output": _text(
                    f"Recent output; stored truncated to {agent_limits.STORED_OUTPUT_MAX} characters.",
                    agent_limits.OUTPUT_MAX,
                ),
                "score": SCORE,
                "progress": number(
                    f"Progress of the current task, 0 to {agent_limits.PROGRESS_MAX}.",
                    minimum=0,
                    maximum=agent_limits.PROGRESS_MAX,
                ),
                "server": _text("Server identifier, for filtering and broadcast.", ID),
                "hostname": _text("Host name.", ID),
                "agent": _text('Agent type, e.g. "claude-code" or "agent-node:codex-sdk".', ID),
                "project_dir": _text("Working directory.", agent_limits.PATH_MAX),
                "version": _text("Agent version.", ID),
                "tmux_name": _text("tmux session name.", ID),
                "node_id": _text("Stable id of the machine; with it, model/node_name/runtime are kept per node.", ID),
                "session_id": _text("The runtime's own session or thread id.", ID),
                "config_path": _text("Configuration file path.", agent_limits.PATH_MAX),
                "channels": json_string_array(
                    'Channel list as a JSON array string, e.g. ["general"].', max_length=validate.TEXT_MAX
                ),
                "model": _text("AI model name.", ID),
                "node_name": _text("Display name of the node (stored only with node_id).", ID),
                "network_id": NETWORK_ID,
            },
            required=("resume_id", "alias", "status"),
            service=session_report,
            output=result(resume_id={"type": "string"}, alias={"type": "string"}, inbox_count={"type": "integer"}),
            idempotent=True,
        ),
        Tool(
            name="report_completion",
            title="Report a completed task",
            description=(
                "Report that you finished a task: records the result, marks the task replied (pass its "
                "task_id as `task`; an exact task text also matches your latest open task with that text), "
                "sets you idle, and if the task was a subtask, sends the result up the chain to whoever sent "
                "the parent task. Returns completion_id and the task_id it closed (null if none matched)."
            ),
            params={
                "alias": ALIAS,
                "task": _text("The task_id you completed (recommended), or the task's exact text."),
                "result": _text(
                    f"Summary of the result; tasks keep the first {limits.STORED_RESULT_MAX} characters.",
                    limits.RESULT_MAX,
                ),
                "artifacts": string_list(
                    "Output file paths or URLs.", max_items=limits.ARTIFACTS_MAX, max_length=limits.ARTIFACT_MAX
                ),
                "score": SCORE,
                "duration_minutes": number("Time taken, in minutes.", minimum=0, maximum=limits.DURATION_MAX),
                "network_id": NETWORK_ID,
            },
            required=("alias", "task", "result"),
            service=completion_report,
            output=result(completion_id={"type": "string"}, task_id=nullable("string")),
        ),
        Tool(
            name="get_inbox",
            title="Get inbox",
            description=(
                "Fetch the messages waiting for an alias, high priority first, then oldest first. Each has an "
                "id, a type (task, message, reply, broadcast, chained_reply, notice), the content and who sent "
                "it. Work on `task` and `broadcast` messages; acknowledge each with ack_inbox so it is not "
                "delivered again. With wait_seconds, an empty inbox answers as soon as a message arrives "
                "(or empty when the time is up): poll with wait_seconds=30 instead of sleeping. Keep "
                "wait_seconds a few seconds under your client's tool-call timeout (e.g. 3 if calls time out "
                "after 5 s); a call cut off by it returns nothing (the messages stay in the inbox). A client "
                "that sends a progressToken and accepts text/event-stream gets progress every few seconds "
                "while it waits, which keeps alive a timeout that restarts on progress."
            ),
            params={
                "alias": ALIAS,
                "limit": integer(
                    "At most this many messages.",
                    minimum=1,
                    maximum=limits.INBOX_LIMIT_MAX,
                    default=limits.INBOX_LIMIT_DEFAULT,
                ),
                "network_id": NETWORK_ID,
                "wait_seconds": number(
                    "If the inbox is empty, wait up to this long for a message.",
                    minimum=0,
                    maximum=limits.WAIT_SECONDS_MAX,
                ),
            },
            required=("alias",),
            service=inbox_list,
            output=result(messages=rows("Waiting messages, in delivery order.")),
            read_only=True,
        ),
        Tool(
            name="ack_inbox",
            title="Acknowledge an inbox message",
            description=(
                "Acknowledge a message from get_inbox so it is not delivered again; a task message moves its "
                "task from delivered to acked. To answer the sender use send_reply or report_completion."
            ),
            params={
                "alias": ALIAS,
                "message_id": _text("The message's id from get_inbox.", ID),
                "response": _text("Accepted for compatibility and not stored; use send_reply to answer."),
            },
            required=("alias", "message_id"),
            service=inbox_ack,
            output=result(),
            idempotent=True,
        ),
        Tool(
            name="send_task",
            title="Send a task",
            description=(
                "Dispatch a task to an agent's inbox; the receiving agent will act on it. Delivered at once, "
                "expires if nobody picks it up within ttl_seconds. Sending to an alias that has not reported "
                "yet is accepted with a warning. Pass client_request_id to make retries of this call safe: a "
                "repeat returns the first task. Returns task_id (= message_id) and the receiver's status."
            ),
            params={
                "alias": ALIAS,
                "task": _text("What to do."),
                "priority": string("Delivery priority (default normal).", enum=Priority.values),
                "context": _text("Background the receiver needs."),
                "from_session": FROM_SESSION,
                "ttl_seconds": integer("Seconds the task may wait to be picked up.", minimum=1, maximum=limits.TTL_MAX),
                "network_id": NETWORK_ID,
                "parent_task_id": _text("The task this one is a subtask of; its result goes up the chain.", ID),
                "client_request_id": _text("Your idempotency key for this send.", ID),
            },
            required=("alias", "task"),
            service=task_send,
            output=result(task_id={"type": "string"}, duplicate={"type": "boolean"}, **DELIVERY),
        ),
        Tool(
            name="send_message",
            title="Send a message",
            description=(
                "Show a message in an agent's inbox. Unlike send_task it asks for no work and the receiving "
                "agent does not act on it. Returns message_id and the receiver's status."
            ),
            params={
                "alias": ALIAS,
                "message": _text("The message."),
                "from_session": FROM_SESSION,
                "network_id": NETWORK_ID,
            },
            required=("alias", "message"),
            service=message_send,
            output=result(**DELIVERY),
        ),
        Tool(
            name="send_reply",
            title="Reply to a task or message",
            description=(
                "Reply to an agent. With in_reply_to set to a task_id, the reply also ends that task with "
                f"`status` ({reply_outcomes}); a finished task cannot be answered again. The "
                "receiving agent sees the reply but does not act on it."
            ),
            params={
                "alias": ALIAS,
                "text": _text("The reply."),
                "in_reply_to": _text("The task_id (or message id) this answers.", ID),
                "status": string("How the task ends (default replied).", enum=outcomes),
                "from_session": FROM_SESSION,
                "network_id": NETWORK_ID,
            },
            required=("alias", "text"),
            service=reply_send,
            output=result(**DELIVERY),
        ),
        Tool(
            name="send_ack",
            title="Acknowledge a task",
            description=(
                "Acknowledge a task by id without touching any inbox: a created or delivered task becomes "
                "acked (updated 1); an already acknowledged one is left as it is (updated 0)."
            ),
            params={"task_id": TASK_ID, "from_session": FROM_SESSION},
            required=("task_id",),
            service=task_ack,
            output=result(task_id={"type": "string"}, updated={"type": "integer"}),
            idempotent=True,
        ),
        Tool(
            name="retry_task",
            title="Retry a task",
            description=(
                "Send a failed, expired or cancelled task again to the same agent, under the same task_id, "
                f"with a fresh {retry_ttl} to be picked up. Returns who it was sent to."
            ),
            params={"task_id": TASK_ID, "from_session": FROM_SESSION},
            required=("task_id",),
            service=task_retry,
            output=result(task_id={"type": "string"}, retried_to={"type": "string"}, message_id={"type": "string"}),
        ),
        Tool(
            name="cancel_task",
            title="Cancel a task",
            description=(
                "Cancel a task that has not finished (created, delivered, acked or running); it leaves the "
                "agent's inbox. A finished task answers cancelled: false."
            ),
            params={
                "task_id": TASK_ID,
                "reason": _text("Why, for the record.", limits.REASON_MAX),
                "from_session": FROM_SESSION,
            },
            required=("task_id",),
            service=task_cancel,
            output=result(task_id={"type": "string"}, cancelled={"type": "boolean"}),
            destructive=True,
            idempotent=True,
        ),
        Tool(
            name="reassign_task",
            title="Reassign a task",
            description=(
                "Move an unfinished task to another agent: it leaves the old agent's inbox (a running task is "
                "interrupted) and is delivered afresh to new_alias, keeping its expiry time."
            ),
            params={
                "task_id": TASK_ID,
                "new_alias": _text("The agent to take the task over.", ID),
                "from_session": FROM_SESSION,
            },
            required=("task_id", "new_alias"),
            service=task_reassign,
            output=result(
                task_id={"type": "string"},
                reassigned_from={"type": "string"},
                reassigned_to={"type": "string"},
                **DELIVERY,
            ),
            destructive=True,
        ),
        Tool(
            name="get_task",
            title="Get a task",
            description=(
                "Everything about one task: sender, receiver, status, content, context, result, all its "
                "times, parent task, and `events`, the history of its status changes. `attempts` lists each "
                "delivery (1, 2, ... after retries or reassigns): agent, outcome, result, who ended it, when."
            ),
            params={"task_id": TASK_ID},
            required=("task_id",),
            service=task_get,
            output=result(
                task={"type": "object"},
                events=rows("Status changes, oldest first."),
                attempts=rows("Deliveries of the task, first attempt first."),
            ),
            read_only=True,
        ),
        Tool(
            name="list_tasks",
            title="List tasks",
            description=(
                "The newest tasks, filtered by receiver (alias), status or sender (from_name). `stats` counts "
                "every task in scope by status, whatever the filters. Use get_task for a task's full record."
            ),
            params={
                "alias": _text("Only tasks sent to this alias.", ID),
                "status": string("Only tasks in this status.", enum=TaskStatus.values),
                "from_name": _text("Only tasks from this sender.", ID),
                "network_id": NETWORK_ID,
                "limit": integer(
                    "At most this many tasks.",
                    minimum=1,
                    maximum=limits.TASK_LIST_LIMIT_MAX,
                    default=limits.TASK_LIST_LIMIT_DEFAULT,
                ),
            },
            required=(),
            service=task_list,
            output=result(
                tasks=rows("Newest first."),
                count={"type": "integer"},
                stats=counts("Tasks in scope by status."),
            ),
            read_only=True,
        ),
        Tool(
            name="get_all_status",
            title="Get all agents' status",
            description=(
                "Every agent session in scope with its status, task, model, host and last heartbeat "
                f"(silent for {offline} reads offline), and `summary`, the count by status."
            ),
            params={"filter_status": SESSION_STATUS, "filter_server": SERVER_FILTER, "network_id": NETWORK_ID},
            required=(),
            service=session_list,
            output=result(sessions=rows("Agent sessions."), summary=counts("Sessions in scope by status.")),
            read_only=True,
        ),
        Tool(
            name="get_session_status",
            title="Get one agent's status",
            description=(
                "One agent's session (null if that alias never reported), how many inbox messages wait for "
                f"it, and its {RECENT_COMPLETIONS} latest completions."
            ),
            params={"alias": ALIAS, "network_id": NETWORK_ID},
            required=("alias",),
            service=session_get,
            output=result(
                session={**nullable("object")},
                inbox_pending={"type": "integer"},
                recent_completions=rows(f"Newest first, at most {RECENT_COMPLETIONS}."),
            ),
            read_only=True,
        ),
        Tool(
            name="get_completions",
            title="Get completions",
            description=(
                "Completion records, newest first: who finished what, the result, artifacts (a JSON array "
                "string), score and duration. Defaults to the last 24 hours."
            ),
            params={
                "alias": _text("Only this agent's completions.", ID),
                "since": string(
                    "ISO 8601 time, e.g. 2026-04-12T10:00:00Z (default: 24 hours ago).",
                    max_length=validate.MOMENT_MAX,
                    format="date-time",
                ),
                "network_id": NETWORK_ID,
                "limit": integer(
                    "At most this many.",
                    minimum=1,
                    maximum=limits.COMPLETIONS_LIMIT_MAX,
                    default=limits.COMPLETIONS_LIMIT_DEFAULT,
                ),
            },
            required=(),
            service=completion_list,
            output=result(completions=rows("Newest first.")),
            read_only=True,
        ),
        Tool(
            name="broadcast",
            title="Broadcast",
            description=(
                "Send a message from the hub to every online agent in the network (optionally only those on "
                "one server or in one status). Receiving agents act on it like a task. Returns how many "
                "received it and their message ids."
            ),
            params={
                "message": _text("The message."),
                "filter_server": SERVER_FILTER,
                "filter_status": SESSION_STATUS,
                "network_id": NETWORK_ID,
            },
            required=("message",),
            service=broadcast_send,
            output=result(recipients={"type": "integer"}, message_ids={"type": "array", "items": {"type": "string"}}),
        ),
    ]


TOOLS: list[Tool] = []
TOOLS_BY_NAME: dict[str, Tool] = {}


def rebuild() -> None:
    """Build every spec again, in place (importers keep their references): after a limit changed."""
    built = _build()
    TOOLS[:] = built
    TOOLS_BY_NAME.clear()
    TOOLS_BY_NAME.update((tool.name, tool) for tool in built)


@receiver(setting_changed)
def _setting_changed(*, setting: str, **kwargs: Any) -> None:
    if setting == "COMMHUB_OFFLINE_AFTER_SECONDS":
        rebuild()


def invoke(name: str, actor: Actor, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run one tool by name (the dashboard's writes): the same door, and write limit, as MCP and REST."""
    return TOOLS_BY_NAME[name].run(actor, arguments)


rebuild()
