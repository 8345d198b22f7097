"""Every limit on what tasks, messages and completions accept: stated here once.

The services and selectors check against these (read at call time, as `limits.NAME`), and the tool
specs in hub_tools describe them to clients (MCP inputSchema, OpenAPI), so a change here reaches the
check and both schemas. Text and id lengths shared with the agents app are in hub_core.validate.
"""

from __future__ import annotations

from datetime import timedelta

RESULT_MAX = 50_000  # completion results, accepted whole
STORED_RESULT_MAX = 4_000  # what a task row keeps of a result
REASON_MAX = 1_000  # cancel_task's reason
ARTIFACTS_MAX = 50  # artifacts per completion
ARTIFACT_MAX = 2_000  # one artifact's path or URL
TTL_MAX = 86_400  # a task may wait a day to be picked up
RETRY_TTL = timedelta(hours=1)  # retry_task always grants a fresh hour, whatever the first TTL was
DURATION_MAX = 525_600  # a year, in minutes
WAIT_SECONDS_MAX = 60  # get_inbox's long poll

# How many rows a listing answers: at most, and when the caller does not say.
INBOX_LIMIT_MAX, INBOX_LIMIT_DEFAULT = 100, 10
TASK_LIST_LIMIT_MAX, TASK_LIST_LIMIT_DEFAULT = 100, 20
COMPLETIONS_LIMIT_MAX, COMPLETIONS_LIMIT_DEFAULT = 500, 50
