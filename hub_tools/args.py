"""Arguments many tools share, each stated once: the spec modules (hub_tools.tools and the modules
it gathers) name them instead of restating their descriptions and limits."""

from __future__ import annotations

from dataclasses import replace

from django.conf import settings

from hub_agents import limits as agent_limits
from hub_agents.models import SessionStatus
from hub_core.formats import duration
from hub_tasks import limits
from hub_tools import params as P
from hub_tools.params import Param

ALIAS = replace(P.identifier("An agent's name in its network.", required=True), said_once=True)
NETWORK_ID = replace(
    P.identifier(
        "The network to act in (net_…). A network token is bound to its network and may omit it; a user "
        "token in several networks names the one to act in.",
    ),
    said_once=True,
)
FROM_SESSION = replace(
    P.identifier(
        'Who is acting, as others will see it: your own alias, so that answers reach you (default "hub"; with '
        "a token bound to one alias, that alias)."
    ),
    said_once=True,
)
TASK_ID = replace(
    P.identifier("A task's id, as sending it answered and its inbox message carries it.", required=True), said_once=True
)
# A call's replay key (hub_tools.replays): the reports an agent's node journals and may send again.
IDEMPOTENCY_KEY = replace(
    P.identifier("Your key for this call: a repeat with it answers as the first did and records nothing."),
    said_once=True,
)
# A run's usage, stored on the task's attempt (report_completion, send_reply; hub_tasks.usage).
USAGE = {
    "tokens_in": replace(P.whole("The run's input tokens.", low=0, high=limits.TOKENS_MAX), said_once=True),
    "tokens_out": replace(P.whole("The run's output tokens.", low=0, high=limits.TOKENS_MAX), said_once=True),
    "cost_usd": replace(P.number("The run's cost in USD.", low=0, high=limits.COST_MAX), said_once=True),
    "model": replace(P.text("The run's model.", limits.MODEL_MAX), said_once=True),
}
# Described once, in the MCP server instructions, instead of on each tool that takes them.
SAID_ONCE = {
    "alias": ALIAS,
    "task_id": TASK_ID,
    "from_session": FROM_SESSION,
    "network_id": NETWORK_ID,
    "idempotency_key": IDEMPOTENCY_KEY,
    **USAGE,
}


def limit(what: str, high: int, default: int) -> Param:
    """A list's `limit`: 1 to `high`, `default` when left out ("At most this many tasks.")."""
    return P.whole(f"At most this many{' ' + what if what else ''}.", low=1, high=high, default=default)


# The limit of the short lists a person works through (questions, approvals).
AT_MOST = limit("", limits.QUESTIONS_LIMIT_MAX, limits.QUESTIONS_LIMIT_DEFAULT)

# An agent's self-assessed quality (report_status, report_completion).
SCORE = P.number("Self-assessed quality.", low=0, high=agent_limits.SCORE_MAX)
SERVER_FILTER = P.identifier("Only sessions that reported this `server`.")


def offline() -> str:
    """How long a silent session still reads online, as the specs say it (a setting: read at build)."""
    return duration(settings.COMMHUB_OFFLINE_AFTER_SECONDS)


def session_status() -> Param:
    """A filter by session status (get_all_status, broadcast)."""
    return P.choice(f"Filter by status; offline means no heartbeat for {offline()}.", SessionStatus.values)


def skills(description: str) -> Param:
    """Skills as short lower-case tags (report_status, send_task's required_skills, find_agents)."""
    return P.tags(
        description,
        max_items=agent_limits.SKILLS_MAX,
        max_len=agent_limits.SKILL_MAX,
        pattern=agent_limits.SKILL_PATTERN,
    )
