"""Every limit on what an agent's heartbeat (report_status) accepts: stated here once.

The tool specs in hub_tools build each argument's parser and published schema from these; the
session service reads STORED_OUTPUT_MAX. Text and id lengths shared with tasks are in hub_core.validate.
"""

from __future__ import annotations

OUTPUT_MAX = 50_000  # recent output, accepted from the agent
STORED_OUTPUT_MAX = 4_000  # kept of it
PATH_MAX = 1_000  # project_dir, config_path
SCORE_MAX = 10  # self-assessed quality, 0 to SCORE_MAX (report_status and report_completion)
PROGRESS_MAX = 100  # percent
SESSIONS_PAGE_MAX = 1_000  # get_all_status with `limit` (beyond the contract; without it, every session)

# Skills (report_status skills, send_task required_skills, find_agents, list_open_tasks): short tags,
# lower-case, so "Python" and "python" can never be two skills.
SKILLS_MAX = 32  # tags one agent (or one open task) may name
SKILL_MAX = 40  # characters in one tag
SKILL_PATTERN = r"^[a-z0-9][a-z0-9._+#-]*$"  # e.g. python, c++, c#, k8s, code-review
CONCURRENT_MAX = 100  # report_status max_concurrent: tasks one agent holds at once (claim_task's limit)

# What a node says of itself (report_node): its runtimes and the agents it hosts, each bounded so one
# call stays small whatever a node's config holds. Texts in them are at most hub_core.validate.ID_MAX.
NODE_RUNTIMES_MAX = 20
NODE_AGENTS_MAX = 500
NODE_SLOTS_MAX = NODE_AGENTS_MAX * CONCURRENT_MAX  # every agent at its most

# Commands to a node (node_command): how many of a run's last lines tail may ask for (how long a node
# has to acknowledge one is the setting COMMHUB_NODE_COMMAND_ACK_SECONDS).
TAIL_LINES_DEFAULT = 50
TAIL_LINES_MAX = 500
TAIL_LINE_MAX = 1_000  # characters of one line, as the node sends it
COMMANDS_PAGE_MAX = 200
