"""Tasks and messages: dispatch, replies, completions, the operator's moves and the reads of tasks.

Each spec names its arguments (hub_tools.params; the shared ones in hub_tools.args), the service it
calls and how its answer renders (hub_tools.results); hub_tools.tools gathers every module's specs in
the contract's order."""

from __future__ import annotations

from hub_agents.identity import AGENT, SENDER
from hub_core import validate
from hub_core.formats import duration
from hub_tasks import limits
from hub_tasks.models import (
    POOL,
    TRANSITIONS,
    Move,
    OnDependencyFailure,
    OnLost,
    Priority,
    TaskStatus,
)
from hub_tasks.selectors import (
    completion_list,
    task_rows,
    task_thread,
    task_with_history,
)
from hub_tasks.services import (
    broadcast_send,
    completion_report,
    message_send,
    reply_send,
    task_ack,
    task_cancel,
    task_reassign,
    task_retry,
    task_send,
)
from hub_tasks.settled import settled
from hub_tools import args as A
from hub_tools import params as P
from hub_tools import results as R
from hub_tools.schema import counts, nullable, result, rows
from hub_tools.tool import Tool


def _reply_outcomes() -> list[str]:
    """How a reply may end its task (the REPLY row of TRANSITIONS), in TaskStatus order."""
    _, outcomes = TRANSITIONS[Move.REPLY]
    return [status for status in TaskStatus.values if status in outcomes]


def specs() -> list[Tool]:
    """These tools' specs, from the limits, tables and settings as they are now."""
    outcomes = _reply_outcomes()
    reply_outcomes = f"{', '.join(outcomes[:-1])} or {outcomes[-1]}" if len(outcomes) > 1 else outcomes[0]
    retry_ttl = duration(int(limits.RETRY_TTL.total_seconds()), one="")
    ALIAS, NETWORK_ID, FROM_SESSION, TASK_ID = A.ALIAS, A.NETWORK_ID, A.FROM_SESSION, A.TASK_ID
    SCORE, SESSION_STATUS, SERVER_FILTER, skills = A.SCORE, A.session_status(), A.SERVER_FILTER, A.skills
    DELIVERY = {
        "message_id": {"type": "string"},
        "session_status": {**nullable("string"), "description": "the receiver's status; null if it never reported"},
    }
    return [
        Tool(
            name="report_completion",
            title="Report a completed task",
            description=(
                "Report a finished task: records the result, marks the task replied (`task`: its task_id; its "
                "exact text matches your latest open task with it), sets you idle, and sends a subtask's result "
                "up the chain to the parent task's sender. Returns completion_id and the task_id it closed "
                "(null, with a warning, if none matched)."
            ),
            params={
                "alias": ALIAS,
                "task": P.text("The task_id (recommended), or the task's exact text.", required=True),
                "result": P.text(
                    f"The result; the task keeps its first {limits.STORED_RESULT_MAX} characters.",
                    limits.RESULT_MAX,
                    required=True,
                ),
                "artifacts": P.text_list(
                    "Output file paths or URLs.", max_items=limits.ARTIFACTS_MAX, max_len=limits.ARTIFACT_MAX
                ),
                "score": SCORE,
                "duration_minutes": P.number("Time taken, in minutes.", low=0, high=limits.DURATION_MAX),
                "network_id": NETWORK_ID,
                **A.USAGE,
                "idempotency_key": A.IDEMPOTENCY_KEY,
            },
            callers={"alias": AGENT},
            service=completion_report,
            render=R.completion_recorded,
            output=result(completion_id={"type": "string"}, task_id=nullable("string")),
        ),
        Tool(
            name="send_task",
            title="Send a task",
            description=(
                "Send a task to an agent's inbox: it acts on it. Expires unless picked up within ttl_seconds. "
                "An alias that never reported is accepted with a warning. client_request_id makes retries safe: "
                "a repeat returns the first task. Returns task_id (= message_id) and the receiver's status."
            ),
            params={
                "alias": ALIAS,
                "task": P.text("What to do.", required=True),
                "priority": P.choice("Delivery priority (default normal).", Priority.values, default=Priority.NORMAL),
                "context": P.text("Background the receiver needs."),
                "from_session": FROM_SESSION,
                "ttl_seconds": P.whole("Seconds the task may wait to be picked up.", low=1, high=limits.TTL_MAX),
                "network_id": NETWORK_ID,
                "parent_task_id": P.identifier("The parent task: this one's result goes up the chain."),
                "client_request_id": P.identifier("Your idempotency key for this send."),
                "lease_seconds": P.whole(
                    "Once acked or started, the agent holds the task on this lease, renewed by each of its calls; "
                    "silent longer, on_lost applies. Default: the network's default lease, else none.",
                    low=1,
                    high=limits.LEASE_MAX,
                ),
                "on_lost": P.choice(
                    "When the lease lapses: requeue (default) delivers it again to the same agent; fail fails it "
                    "(retried while max_attempts allows). The sender is told.",
                    OnLost.values,
                    default=OnLost.REQUEUE,
                ),
                "max_attempts": P.whole(
                    "Deliveries in all: a failed attempt is retried after a backoff while attempts remain; the "
                    "last failure dead-letters the task. Default 1: no retries.",
                    low=1,
                    high=limits.ATTEMPTS_MAX,
                    default=1,
                ),
                "retry_backoff_seconds": P.whole(
                    f"Wait before the first retry, doubling up to {duration(limits.RETRY_DELAY_MAX)}, with jitter.",
                    low=1,
                    high=limits.RETRY_BACKOFF_MAX,
                    default=limits.RETRY_BACKOFF_DEFAULT,
                ),
                "depends_on": P.text_list(
                    "Tasks (same network) to wait for: this one stays created, in no inbox, until all are replied.",
                    max_items=limits.DEPENDS_MAX,
                    max_len=validate.ID_MAX,
                    unique=True,
                ),
                "on_dependency_failure": P.choice(
                    "If one it depends on ends failed, cancelled or expired: cancel (default) cancels this one; "
                    "run counts it met.",
                    OnDependencyFailure.values,
                    default=OnDependencyFailure.CANCEL,
                ),
                "not_before": P.moment("ISO 8601 time before which it is not delivered; ttl_seconds counts from then."),
                "not_before_seconds": P.whole(
                    "not_before in seconds from now; given both, the later holds.",
                    low=0,
                    high=limits.NOT_BEFORE_MAX,
                ),
                "required_skills": skills(
                    f'With alias "{POOL}": an open task any agent with these skills may claim (claim_task); '
                    "they are woken. Its TTL counts from now."
                ),
                "budget_usd": P.number(
                    "Cap on one run's cost, USD (its agent's node stops it).",
                    low=limits.BUDGET_USD_MIN,
                    high=limits.COST_MAX,
                ),
                "budget_tokens": P.whole("Cap on one run's tokens.", low=1, high=limits.TOKENS_MAX),
            },
            callers={"from_session": SENDER},
            service=task_send,
            gateable=True,
            render=R.task_sent,
            output=result(task_id={"type": "string"}, duplicate={"type": "boolean"}, **DELIVERY),
        ),
        Tool(
            name="send_message",
            title="Send a message",
            description=(
                "Show a message in an agent's inbox; unlike send_task it asks for no work. Returns message_id "
                "and the receiver's status."
            ),
            params={
                "alias": ALIAS,
                "message": P.text("The message.", required=True),
                "from_session": FROM_SESSION,
                "network_id": NETWORK_ID,
            },
            callers={"from_session": SENDER},
            service=message_send,
            gateable=True,
            render=R.delivered,
            output=result(**DELIVERY),
        ),
        Tool(
            name="send_reply",
            title="Reply to a task or message",
            description=(
                "Reply to an agent. With in_reply_to = a task_id it also ends that task with "
                f"`status` ({reply_outcomes}); a finished task cannot be answered again. The receiver does not "
                "act on a reply."
            ),
            params={
                "alias": ALIAS,
                "text": P.text("The reply.", required=True),
                "in_reply_to": P.identifier("The task_id (or message id) this answers."),
                "status": P.choice("How the task ends (default replied).", outcomes, default=TaskStatus.REPLIED),
                "from_session": FROM_SESSION,
                "network_id": NETWORK_ID,
                **A.USAGE,
                "idempotency_key": A.IDEMPOTENCY_KEY,
            },
            callers={"from_session": SENDER},
            service=reply_send,
            render=R.delivered,
            output=result(**DELIVERY),
        ),
        Tool(
            name="send_ack",
            title="Acknowledge a task",
            description=(
                "Acknowledge a task by id, touching no inbox: created or delivered becomes acked (updated 1); "
                "one already acknowledged stays (updated 0)."
            ),
            params={"task_id": TASK_ID, "from_session": FROM_SESSION},
            callers={"from_session": SENDER},
            service=task_ack,
            render=R.as_fields,
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
            callers={"from_session": SENDER},
            service=task_retry,
            gateable=True,
            render=R.as_fields,
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
                "reason": P.text("Why, for the record.", limits.REASON_MAX),
                "from_session": FROM_SESSION,
            },
            callers={"from_session": SENDER},
            service=task_cancel,
            gateable=True,
            render=R.task_cancelled,
            output=result(task_id={"type": "string"}, cancelled={"type": "boolean"}),
            destructive=True,
            idempotent=True,
        ),
        Tool(
            name="reassign_task",
            title="Reassign a task",
            description=(
                "Move an unfinished task to new_alias: it leaves the old agent's inbox (a running task is "
                "interrupted) and is delivered afresh, keeping its expiry."
            ),
            params={
                "task_id": TASK_ID,
                "new_alias": P.identifier("The agent to take the task over.", required=True),
                "from_session": FROM_SESSION,
            },
            callers={"from_session": SENDER},
            service=task_reassign,
            gateable=True,
            render=R.task_reassigned,
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
                "One task in full: sender, receiver, status, content, context, result, times, parent, lease, "
                "retry policy, dead-letter mark; `events`, its history; `attempts`, each delivery (agent, "
                "outcome, result, who ended it, when)."
            ),
            params={"task_id": TASK_ID},
            service=settled(task_with_history),
            render=R.as_fields,
            output=result(
                task={"type": "object"},
                events=rows("History, oldest first: status changes, questions asked and answered (`kind`)."),
                attempts=rows("Deliveries of the task, first attempt first."),
                questions=rows("Questions its agent asked of a person (ask_operator), oldest first."),
            ),
            read_only=True,
        ),
        Tool(
            name="list_tasks",
            title="List tasks",
            description=(
                "The newest tasks, by receiver (alias), status or sender (from_name); `stats` counts every "
                "task in scope by status, whatever the filters."
            ),
            params={
                "alias": P.identifier("Only tasks sent to this alias."),
                "status": P.choice("Only tasks in this status.", TaskStatus.values),
                "from_name": P.identifier("Only tasks from this sender."),
                "dead_letter": P.flag("Only tasks failed after their last retry."),
                "blocked": P.flag("Only tasks waiting for dependencies or not_before."),
                "network_id": NETWORK_ID,
                "limit": A.limit("tasks", limits.TASK_LIST_LIMIT_MAX, limits.TASK_LIST_LIMIT_DEFAULT),
            },
            service=settled(task_rows),
            render=R.task_listing,
            output=result(
                tasks=rows("Newest first."),
                count={"type": "integer"},
                stats=counts("Tasks in scope by status."),
            ),
            read_only=True,
        ),
        Tool(
            name="get_completions",
            title="Get completions",
            description=(
                "Completions, newest first: who finished what, result, artifacts (a JSON array string), score, "
                "duration. Default: the last 24 hours."
            ),
            params={
                "alias": P.identifier("Only this agent's completions."),
                "since": P.moment("ISO 8601 time (default: 24 hours ago)."),
                "network_id": NETWORK_ID,
                "limit": A.limit("", limits.COMPLETIONS_LIMIT_MAX, limits.COMPLETIONS_LIMIT_DEFAULT),
            },
            service=completion_list,
            render=R.completions,
            output=result(completions=rows("Newest first.")),
            read_only=True,
        ),
        Tool(
            name="broadcast",
            title="Broadcast",
            description=(
                "A message from the hub to every online agent in the network (or those on one server or in one "
                "status); they act on it like a task. Returns how many got it and the message ids."
            ),
            params={
                "message": P.text("The message.", required=True),
                "filter_server": SERVER_FILTER,
                "filter_status": SESSION_STATUS,
                "network_id": NETWORK_ID,
            },
            service=broadcast_send,
            gateable=True,
            render=R.broadcast_sent,
            output=result(recipients={"type": "integer"}, message_ids={"type": "array", "items": {"type": "string"}}),
        ),
        # Beyond the contract: a task's conversation (issue 18).
        Tool(
            name="get_thread",
            title="Get a task's thread",
            description=(
                "A task's conversation, oldest first: the task, its agent's questions and their answers, "
                "replies, chained replies (subtask results), notices and completions. Read it to pick up "
                "someone else's task."
            ),
            params={"task_id": TASK_ID},
            service=task_thread,
            render=R.thread,
            output=result(
                task_id={"type": "string"},
                entries=rows(
                    "Oldest first; kind is task, question, answer, message (type: reply, chained_reply, "
                    "notice, ...) or completion."
                ),
            ),
            read_only=True,
        ),
    ]
