"""Refusals in an operator's words.

Services raise HubError with text written for agents ("Fix the argument `ttl_seconds` and call
again: ..."), which MCP and REST answer unchanged. The dashboard shows the same refusal next to
the form field it is about, in plain language; this is the one place that translation lives.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from hub_core.errors import HubError
from hub_core.formats import duration
from hub_tasks import limits

# What each argument is called on the dashboard's forms.
LABELS = {
    "alias": "Agent",
    "new_alias": "Agent",
    "task": "Task",
    "priority": "Priority",
    "context": "Context",
    "ttl_seconds": "Time to live",
    "parent_task_id": "Parent task",
    "reason": "Reason",
    "message": "Message",
    "filter_server": "Server",
    "filter_status": "Status",
    "aliases": "Acts as",
}

# (field, the kinds of problem it applies to, None: any) -> the sentence an operator needs; the first
# that applies wins. Kinds are invalid_argument's (hub_core.errors.KINDS), never its English.
REQUIRED = frozenset({"required", "empty"})
SENTENCES: dict[str, list[tuple[frozenset[str] | None, str]]] = {
    "alias": [(REQUIRED, "Choose or type the agent that should do this task.")],
    "new_alias": [(REQUIRED, "Choose an agent to hand the task to.")],
    "task": [(REQUIRED, "Describe the task for the agent.")],
    "ttl_seconds": [
        (
            None,
            "Enter the time to live as a whole number of seconds, from 1 to {ttl_max} ({ttl_max_words}), "
            "or leave it empty for {default_ttl_words}.",
        )
    ],
    "parent_task_id": [(None, "Enter the id of an existing task (copy it from its page), or leave it empty.")],
}

# A kind's sentence for any field: {label} names it, and the kind's details fill the rest.
GENERIC = {
    "required": "{label} is required.",
    "empty": "{label} is required.",
    "too_long": "{label} is too long: at most {max} characters.",
    "not_text": "{label} contains characters that are not text; retype it.",
    "not_one_of": "Choose one of: {choices}.",
}

# Codes whose own message is written for agents; others (permission_denied, ...) already read plainly.
CODES = {
    "parent_task_not_found": ("parent_task_id", "No task with this id in this network; check the parent task."),
    "task_not_retryable": ("", "Only a failed, expired or cancelled task can be retried."),
    "task_not_found": ("", "No task with this id in your networks: check the link, or find it on the Tasks page."),
    "rate_limited": ("", "Too many changes in a short time; wait a moment and try again."),
    "channel_not_found": (
        "",
        "No channel with this id in your networks: check the link, or pick one on the Channels page.",
    ),
    "channel_exists": ("name", "This network has a channel of that name already: pick another name, or open it."),
}


def _limits() -> dict[str, object]:
    """The limits a sentence may name, from their one definition (and the settings) as they are now."""
    return {
        "ttl_max": limits.TTL_MAX,
        "ttl_max_words": duration(limits.TTL_MAX, one="one"),
        "default_ttl_words": duration(settings.COMMHUB_DEFAULT_TTL_SECONDS, one="one"),
    }


@dataclass(frozen=True)
class Refusal:
    field: str  # the form field it is about, or "" for the form as a whole
    text: str


def refusal_for_operator(refusal: HubError) -> Refusal:
    """The refusal as the dashboard shows it: which field, and what to do, in plain words."""
    if refusal.code == "task_terminal":
        status = refusal.error.rsplit("(", 1)[-1].rstrip(")")
        return Refusal(
            "", f"This task has already ended ({status}); only a failed, expired or cancelled one can be retried."
        )
    if refusal.code in CODES:
        return Refusal(*CODES[refusal.code])
    field = str(refusal.extra.get("field") or "")
    if refusal.code != "invalid_argument" or not field:
        return Refusal("", refusal.message)
    problem = refusal.error.removeprefix(f"{field}: ")
    kind = refusal.problem.kind if refusal.problem else "other"
    label = LABELS.get(field, field.replace("_", " ").capitalize())
    for kinds, sentence in SENTENCES.get(field, []):
        if kinds is None or kind in kinds:
            return Refusal(field, sentence.format(**_limits()))
    if kind in GENERIC:
        detail = refusal.problem.detail if refusal.problem else {}
        shown = {name: ", ".join(value) if isinstance(value, list) else value for name, value in detail.items()}
        return Refusal(field, GENERIC[kind].format(label=label, **shown))
    return Refusal(field, f"{label} {problem}.")
