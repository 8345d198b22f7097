"""Every limit on what an agent's heartbeat (report_status) accepts: stated here once.

Checked by hub_fleet's session_report and described by the tool spec in hub_tools, both reading
these at call time (`limits.NAME`). Text and id lengths shared with tasks are in hub_core.validate.
"""

from __future__ import annotations

OUTPUT_MAX = 50_000  # recent output, accepted from the agent
STORED_OUTPUT_MAX = 4_000  # kept of it
PATH_MAX = 1_000  # project_dir, config_path
SCORE_MAX = 10  # self-assessed quality, 0 to SCORE_MAX (report_status and report_completion)
PROGRESS_MAX = 100  # percent
