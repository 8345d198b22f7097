"""hub_schedules' error codes (hub_core.errors catalogue)."""

from __future__ import annotations

from hub_core.errors import codes_declare

codes_declare(
    __name__,
    {
        "schedule_not_found": (404, "No such schedule in your networks."),
        "schedule_name_taken": (409, "The network has a schedule of that name already."),
    },
)
