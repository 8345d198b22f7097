"""The agents' own reports and the fleet as a whole: report_status, the sessions, the open pool.

Each spec names its arguments (hub_tools.params; the shared ones in hub_tools.args), the service it
calls and how its answer renders (hub_tools.results); hub_tools.tools gathers every module's specs in
the contract's order."""

from __future__ import annotations

from hub_agents import limits as agent_limits
from hub_agents.identity import AGENT
from hub_agents.models import SessionStatus
from hub_agents.selectors import SESSION_CURSOR_SHAPE, session_list
from hub_core import validate
from hub_fleet.pool import agents_find, open_tasks, task_claim
from hub_fleet.selectors import RECENT_COMPLETIONS, session_get
from hub_fleet.services import require_network_token, session_report
from hub_tasks import limits
from hub_tasks.models import (
    POOL,
)
from hub_tasks.settled import settled
from hub_tools import args as A
from hub_tools import params as P
from hub_tools import results as R
from hub_tools.schema import counts, nullable, result, rows
from hub_tools.tool import Tool


def specs() -> list[Tool]:
    """These tools' specs, from the limits, tables and settings as they are now."""
    offline = A.offline()
    ALIAS, NETWORK_ID, TASK_ID = A.ALIAS, A.NETWORK_ID, A.TASK_ID
    SCORE, SESSION_STATUS, SERVER_FILTER, skills = A.SCORE, A.session_status(), A.SERVER_FILTER, A.skills
    return [
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
    ]
