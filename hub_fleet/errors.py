"""hub_fleet's error codes (hub_core.errors catalogue): claiming from the open pool, concurrency caps,
budgets."""

from __future__ import annotations

from hub_core.errors import codes_declare

codes_declare(
    __name__,
    {
        "task_not_open": (409, "The task was sent to an agent, not to the open pool."),
        "task_claimed": (409, "Another claim took the open task first."),
        "session_required": (409, "The alias has not reported (report_status) in this network."),
        "agent_offline": (409, "The alias sent no heartbeat for too long to take work."),
        "skills_missing": (409, "The alias has not reported the skills the task requires."),
        "at_capacity": (409, "The alias holds its max_concurrent tasks already."),
        "cap_full": (409, "A concurrency cap the open task matches has every slot taken."),
        "cap_not_found": (404, "No such concurrency cap in your networks."),
        "budget_not_found": (404, "No such budget in your networks."),
    },
)
