"""Every limit on what tasks, messages and completions accept: stated here once.

The tool specs in hub_tools build each argument's parser and published schema (MCP inputSchema,
OpenAPI) from these when they are built, so a change here reaches the check and both schemas; the
services read the few that are rules about stored data (STORED_RESULT_MAX, RETRY_TTL).
Text and id lengths shared with the agents app are in hub_core.validate.
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

# Leases and automatic retries (send_task's lease_seconds, max_attempts, retry_backoff_seconds).
# An agent may stay silent at most a day on one lease (hub_agents.models.LEASE_SECONDS_MAX, the
# network default's bound, is the same: tests/hub_tasks/test_leases.py holds the two together).
LEASE_MAX = 86_400
ATTEMPTS_MAX = 20  # deliveries of one task, the first included
RETRY_BACKOFF_DEFAULT = 30  # the first automatic retry waits 15 to 30 s ...
RETRY_BACKOFF_MAX = 3_600
RETRY_DELAY_MAX = 3_600  # ... each next one twice that, up to an hour

# Dependencies and scheduled tasks (send_task's depends_on and not_before).
DEPENDS_MAX = 100  # tasks one task may wait for
NOT_BEFORE_MAX = 30 * 86_400  # a task may be scheduled at most 30 days ahead

# How many rows a listing answers: at most, and when the caller does not say.
INBOX_LIMIT_MAX, INBOX_LIMIT_DEFAULT = 100, 10
TASK_LIST_LIMIT_MAX, TASK_LIST_LIMIT_DEFAULT = 100, 20
COMPLETIONS_LIMIT_MAX, COMPLETIONS_LIMIT_DEFAULT = 500, 50

# Questions to a person (ask_operator, answer_question).
QUESTION_MAX = 4_000  # the question
OPTIONS_MAX = 10  # answers offered to choose from
OPTION_MAX = 200  # one offered answer
ANSWER_MAX = 4_000  # the answer
QUESTIONS_LIMIT_MAX, QUESTIONS_LIMIT_DEFAULT = 100, 20

# A run's usage (report_completion, send_reply) and a task's caps on it (send_task).
TOKENS_MAX = 10**12  # tokens in or out of one run
COST_MAX = 1_000_000.0  # USD of one run
MODEL_MAX = 200  # a model's name
BUDGET_USD_MIN = 0.0001  # a cap must allow something (the schema says "> 0" as a minimum)
