"""The CommHub tools, the contract's 17 (CONTRACT_TOOLS) then the hub's own: one spec each, a thin
adapter over one service or selector.

A spec names each argument with its Param (hub_tools.params: its JSON Schema and its parser, from
one statement of its limit), the service it calls and how the service's answer renders as the
contract's result object (hub_tools.results). Argument names are the services' keyword names.
Specs are built from the `limits` modules and hub_core.validate, the TRANSITIONS table and
TextChoices, and the settings (the offline threshold), so the MCP inputSchema, the OpenAPI schema
(hub_api) and the checks cannot disagree. `rebuild()` builds them again (a changed setting does it
itself). `Tool` itself, and the door every call passes (`Tool.execute`), are in hub_tools.tool.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from hub_agents import limits as agent_limits
from hub_agents.actors import Actor
from hub_agents.identity import AGENT, SENDER
from hub_agents.models import SessionStatus
from hub_agents.selectors import SESSION_CURSOR_SHAPE, session_list
from hub_approvals.models import ApprovalStatus, ApprovalVote
from hub_approvals.services import approval_decide, approval_list
from hub_core import validate
from hub_core.formats import duration
from hub_fleet.pool import agents_find, open_tasks, task_claim
from hub_fleet.selectors import RECENT_COMPLETIONS, session_get
from hub_fleet.services import require_network_token, session_report
from hub_tasks import limits
from hub_tasks.inbox import inbox_fetch
from hub_tasks.models import (
    POOL,
    TRANSITIONS,
    Move,
    OnDependencyFailure,
    OnLost,
    Priority,
    TaskStatus,
)
from hub_tasks.questions import question_answer, question_ask
from hub_tasks.selectors import (
    completion_list,
    question_rows,
    task_rows,
    task_thread,
    task_with_history,
)
from hub_tasks.services import (
    broadcast_send,
    completion_report,
    inbox_ack,
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
from hub_tools import channel_tools, node_tools, search_tools
from hub_tools import params as P
from hub_tools import results as R
from hub_tools.params import Param
from hub_tools.schema import counts, nullable, result, rows
from hub_tools.tool import Tool

# The contract's 17 tools, in its order: tools/list names them first, unchanged; the hub's own tools
# (the open pool, ...) follow them, so a client written against the contract sees what it expects.
CONTRACT_TOOLS: tuple[str, ...] = (
    "report_status", "report_completion", "get_inbox", "ack_inbox", "send_task", "send_message", "send_reply",
    "send_ack", "retry_task", "cancel_task", "reassign_task", "get_task", "list_tasks", "get_all_status",
    "get_session_status", "get_completions", "broadcast",
)  # fmt: skip


def _reply_outcomes() -> list[str]:
    """How a reply may end its task (the REPLY row of TRANSITIONS), in TaskStatus order."""
    _, outcomes = TRANSITIONS[Move.REPLY]
    return [status for status in TaskStatus.values if status in outcomes]


def _build() -> list[Tool]:
    """Every tool's spec, from the limits, tables and settings as they are now."""
    outcomes = _reply_outcomes()
    reply_outcomes = f"{', '.join(outcomes[:-1])} or {outcomes[-1]}" if len(outcomes) > 1 else outcomes[0]
    offline = duration(settings.COMMHUB_OFFLINE_AFTER_SECONDS)
    retry_ttl = duration(int(limits.RETRY_TTL.total_seconds()), one="")
    ALIAS, NETWORK_ID, FROM_SESSION, TASK_ID, AT_MOST = A.ALIAS, A.NETWORK_ID, A.FROM_SESSION, A.TASK_ID, A.AT_MOST
    SCORE = P.number("Self-assessed quality.", low=0, high=agent_limits.SCORE_MAX)
    SESSION_STATUS = P.choice(f"Filter by status; offline means no heartbeat for {offline}.", SessionStatus.values)
    SERVER_FILTER = P.identifier("Only sessions that reported this `server`.")

    def skills(description: str) -> Param:
        return P.tags(
            description,
            max_items=agent_limits.SKILLS_MAX,
            max_len=agent_limits.SKILL_MAX,
            pattern=agent_limits.SKILL_PATTERN,
        )

    DELIVERY = {
        "message_id": {"type": "string"},
        "session_status": {**nullable("string"), "description": "the receiver's status; null if it never reported"},
    }

    tools = [
        Tool(
            name="report_status",
            title="Report status (heartbeat)",
            description=(
                "Your status, and your heartbeat: call it about every 3 minutes and when your status changes "
                f"(silent for {offline}, a session reads offline). `working` with `task` = a task_id (or its "
                "exact text) marks that task running. Needs a network token. Returns inbox_count: messages "
                "waiting for you (get_inbox fetches them)."
            ),
            params={
                "resume_id": P.identifier(
                    "Stable id of this session; a new one replaces the alias's old session.", required=True
                ),
                "alias": ALIAS,
                "status": P.choice("Your status now.", SessionStatus.values, required=True),
                "task": P.text("What you are working on: a task_id, or a description."),
                "output": P.text(
                    f"Recent output; stored truncated to {agent_limits.STORED_OUTPUT_MAX} characters.",
                    agent_limits.OUTPUT_MAX,
                ),
                "score": SCORE,
                "progress": P.number(
                    "Progress of the current task.",
                    low=0,
                    high=agent_limits.PROGRESS_MAX,
                ),
                "server": P.identifier("Server identifier, for filtering and broadcast."),
                "hostname": P.identifier("Host name."),
                "agent": P.identifier('Agent type, e.g. "claude-code" or "agent-node:codex-sdk".'),
                "project_dir": P.text("Working directory.", agent_limits.PATH_MAX),
                "version": P.identifier("Agent version."),
                "tmux_name": P.identifier("tmux session name."),
                "node_id": P.identifier("Stable machine id; with it, model/node_name/runtime are kept per node."),
                "session_id": P.identifier("The runtime's own session or thread id."),
                "config_path": P.text("Configuration file path.", agent_limits.PATH_MAX),
                "channels": P.json_text_list(
                    'Channel list as a JSON array string, e.g. ["general"].', max_len=validate.TEXT_MAX
                ),
                "model": P.identifier("AI model name."),
                "node_name": P.identifier("Display name of the node (stored only with node_id)."),
                "skills": skills(
                    "What you can do, as lower-case tags (python, code-review): open tasks needing them are "
                    "offered to you. Left out: unchanged; []: none."
                ),
                "max_concurrent": P.whole(
                    "At most this many tasks held at once (acked or running); claim_task refuses more. Left out: "
                    "unchanged.",
                    low=1,
                    high=agent_limits.CONCURRENT_MAX,
                ),
                "network_id": NETWORK_ID,
                "idempotency_key": A.IDEMPOTENCY_KEY,
            },
            callers={"alias": AGENT},
            service=session_report,
            render=R.as_fields,
            guard=require_network_token,
            output=result(resume_id={"type": "string"}, alias={"type": "string"}, inbox_count={"type": "integer"}),
            idempotent=True,
        ),
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
            name="get_inbox",
            title="Get inbox",
            description=(
                "Messages waiting for alias, high priority first, then oldest: id, type (task, message, reply, "
                "broadcast, chained_reply, notice), content, sender, delivered_at. Act on task and broadcast "
                "messages; ack_inbox each so it is not delivered again. With wait_seconds an empty inbox answers "
                "when a message arrives (or empty when the time is up): poll with wait_seconds=30 instead of "
                "sleeping, a few seconds under your client's tool-call timeout (a call cut off returns nothing; "
                "the messages stay). A client that sends a progressToken and accepts text/event-stream gets "
                "progress while it waits."
            ),
            params={
                "alias": ALIAS,
                "limit": A.limit("messages", limits.INBOX_LIMIT_MAX, limits.INBOX_LIMIT_DEFAULT),
                "network_id": NETWORK_ID,
                "wait_seconds": P.number(
                    "If the inbox is empty, wait up to this long for a message.",
                    low=0,
                    high=limits.WAIT_SECONDS_MAX,
                ),
            },
            callers={"alias": AGENT},
            service=inbox_fetch,
            render=R.inbox,
            output=result(messages=rows("Waiting messages, in delivery order.")),
            read_only=True,
        ),
        Tool(
            name="ack_inbox",
            title="Acknowledge an inbox message",
            description=(
                "Acknowledge a get_inbox message so it is not delivered again; a task message moves its task "
                "from delivered to acked. Answer with send_reply or report_completion."
            ),
            params={
                "alias": ALIAS,
                "message_id": P.identifier("The message's id from get_inbox.", required=True),
                "response": P.text("Accepted, not stored; send_reply answers."),
                "idempotency_key": A.IDEMPOTENCY_KEY,
            },
            callers={"alias": AGENT},
            service=inbox_ack,
            render=R.acknowledged,
            output=result(),
            idempotent=True,
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
            name="get_all_status",
            title="Get all agents' status",
            description=(
                "Every agent session in scope: status, task, model, host, last heartbeat (silent for "
                f"{offline}: offline); `summary` counts them by status."
            ),
            params={
                "filter_status": SESSION_STATUS,
                "filter_server": SERVER_FILTER,
                "network_id": NETWORK_ID,
                "limit": P.whole(
                    "At most this many sessions, with next_cursor for the rest (default: all at once).",
                    low=1,
                    high=agent_limits.SESSIONS_PAGE_MAX,
                ),
                "cursor": P.cursor("The next_cursor of the previous page.", shape=SESSION_CURSOR_SHAPE),
            },
            service=session_list,
            render=R.session_listing,
            output=result(
                sessions=rows("Agent sessions, by network, alias."),
                summary=counts("Sessions in scope by status."),
                next_cursor={
                    **nullable("string"),
                    "description": "with limit: where the next page starts; null at the end",
                },
            ),
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
            service=settled(session_get),
            render=R.as_fields,
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
        # Beyond the contract: skills and the open pool (hub_fleet.pool).
        Tool(
            name="find_agents",
            title="Find agents by skill",
            description=(
                "Agent sessions with a skill (and a status), least loaded first: skills, max_concurrent, load "
                "(tasks held) and last heartbeat."
            ),
            params={
                "skill": P.identifier("Only agents that reported this skill."),
                "status": SESSION_STATUS,
                "network_id": NETWORK_ID,
            },
            service=agents_find,
            render=R.agents_found,
            output=result(agents=rows("Least loaded first, then by alias.")),
            read_only=True,
        ),
        Tool(
            name="list_open_tasks",
            title="List open tasks",
            description=(
                f'Open tasks in the pool (sent to alias "{POOL}" with required_skills), highest priority, then '
                "oldest first; with alias, those its skills cover."
            ),
            params={
                "alias": P.identifier("Only tasks this agent's reported skills cover."),
                "skill": P.identifier("Only tasks that need this skill."),
                "network_id": NETWORK_ID,
                "limit": A.limit("tasks", limits.TASK_LIST_LIMIT_MAX, limits.TASK_LIST_LIMIT_DEFAULT),
            },
            service=settled(open_tasks),
            render=R.open_tasks,
            output=result(tasks=rows("Highest priority first, then oldest.")),
            read_only=True,
        ),
        Tool(
            name="claim_task",
            title="Claim an open task",
            description=(
                "Take an open task from the pool if your skills cover its required_skills and you hold fewer "
                "than max_concurrent tasks: it is yours, acked. Of many claimers one wins; the others get "
                "task_claimed."
            ),
            params={"task_id": TASK_ID, "alias": ALIAS, "network_id": NETWORK_ID},
            callers={"alias": AGENT},
            service=settled(task_claim),
            render=R.task_claimed,
            # task_claim renews the claimer's leases itself, once the claim is allowed (never a viewer's
            # refused claim).
            output=result(
                task_id={"type": "string"},
                claimed_by={"type": "string"},
                lease_expires_at={**nullable("string"), "description": "null: the task has no lease"},
            ),
        ),
        # Beyond the contract: questions to a person (hub_tasks.questions).
        Tool(
            name="ask_operator",
            title="Ask a person",
            description=(
                "Ask a person about the task you work on (a decision you may not take alone), with options or "
                "none. The task keeps its status and shows waiting for input; the answer arrives in your inbox "
                "as a reply about the task. Report status waiting_input while you wait."
            ),
            params={
                "task_id": TASK_ID,
                "question": P.text(
                    "The question, with what the person needs to decide.", limits.QUESTION_MAX, required=True
                ),
                "options": P.text_list(
                    "Answers to choose from (shown as buttons).",
                    max_items=limits.OPTIONS_MAX,
                    max_len=limits.OPTION_MAX,
                    unique=True,
                ),
            },
            service=question_ask,
            render=R.as_fields,
            output=result(question_id={"type": "string"}, task_id={"type": "string"}),
        ),
        Tool(
            name="answer_question",
            title="Answer a question",
            description=(
                "Answer an agent's open question (list_questions), once: it gets the answer in its inbox as a "
                "reply about the task. Any text, an offered option or not."
            ),
            params={
                "question_id": P.identifier("The question's id (question_id).", required=True),
                "answer": P.text("The answer.", limits.ANSWER_MAX, required=True),
            },
            service=question_answer,
            render=R.as_fields,
            output=result(question_id={"type": "string"}, task_id={"type": "string"}, message_id={"type": "string"}),
        ),
        Tool(
            name="list_questions",
            title="List questions",
            description=(
                "Questions agents asked a person: unanswered first (oldest first), then answered (newest first)."
            ),
            params={
                "task_id": P.identifier("Only this task's questions."),
                "unanswered": P.flag("Only questions still waiting for an answer."),
                "network_id": NETWORK_ID,
                "limit": AT_MOST,
            },
            service=question_rows,
            render=R.questions,
            output=result(questions=rows("Unanswered first, oldest first; then answered, newest first.")),
            read_only=True,
        ),
        # Beyond the contract: approvals (hub_approvals). A network's rules may hold calls of
        # send_task, send_message, broadcast, retry_task, cancel_task and reassign_task: such a call
        # answers {"ok": true, "pending_approval": true, "approval_id": ...} and runs once approved.
        Tool(
            name="list_approvals",
            title="List approvals",
            description=(
                "Calls held by the network's approval rules, pending first (oldest first), then decided (newest "
                "first): tool, arguments, who asked, votes, and the result once it ran."
            ),
            params={
                "status": P.choice("Only approvals in this state.", ApprovalStatus.values),
                "approval_id": P.identifier("Only this approval."),
                "network_id": NETWORK_ID,
                "limit": AT_MOST,
            },
            service=approval_list,
            render=R.approvals,
            output=result(approvals=rows("Pending first, oldest first; then decided, newest first.")),
            read_only=True,
        ),
        Tool(
            name="decide_approval",
            title="Approve or reject a held call",
            description=(
                "Approve or reject a held call (network owners and admins, not its caller; each once). A "
                "rejection ends it; the approval completing its tier runs it once, as its caller, and returns "
                "its result. The caller's alias is told in its inbox."
            ),
            params={
                "approval_id": P.identifier("The approval's id (approval_id).", required=True),
                "decision": P.choice("approve or reject.", ApprovalVote.Decision.values, required=True),
                "note": P.text("Why: shown to the caller with a rejection, kept with the vote.", limits.ANSWER_MAX),
            },
            service=approval_decide,
            render=R.as_fields,
            output=result(
                approval_id={"type": "string"},
                status={"type": "string", "enum": ApprovalStatus.values},
                approvals={"type": "integer", "description": "yes votes so far"},
                approvals_required={"type": "integer"},
                result={**nullable("object"), "description": "the held call's result object, once it ran"},
                reason={"type": "string"},
            ),
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
    # Beyond the contract: channels and search (issue 18), nodes (issue 25), each module its own specs.
    return [*tools, *channel_tools.specs(), *search_tools.specs(), *node_tools.specs()]


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


def invoke(name: str, actor: Actor, arguments: dict[str, Any]) -> Any:
    """Run one tool by name and answer the service's result (the dashboard's writes, which render it
    their own way): the same door, checks and write limit as MCP and REST."""
    return TOOLS_BY_NAME[name].execute(actor, arguments)


rebuild()
