"""Arguments many tools share, each stated once: the spec modules (hub_tools.tools and the modules
it gathers) name them instead of restating their descriptions and limits."""

from __future__ import annotations

from hub_tasks import limits
from hub_tools import params as P
from hub_tools.params import Param

ALIAS = P.identifier("The agent's alias: its display name in the network.", required=True)
NETWORK_ID = P.identifier(
    "Network id (net_…). A network token is bound to its network and may omit it; a user token in "
    "several networks names the one to act in.",
)
FROM_SESSION = P.identifier('Who is acting, as others will see it (default "hub").')
TASK_ID = P.identifier("The task's id (task_id from send_task or list_tasks).", required=True)


def limit(what: str, high: int, default: int) -> Param:
    """A list's `limit`: 1 to `high`, `default` when left out ("At most this many tasks.")."""
    return P.whole(f"At most this many{' ' + what if what else ''}.", low=1, high=high, default=default)


# The limit of the short lists a person works through (questions, approvals).
AT_MOST = limit("", limits.QUESTIONS_LIMIT_MAX, limits.QUESTIONS_LIMIT_DEFAULT)
