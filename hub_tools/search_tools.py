"""The search tools' specs (issue 18), gathered by hub_tools.tools after the hub's other own tools."""

from __future__ import annotations

from typing import Any

from hub_search.query import QUERY_MAX
from hub_search.selectors import LIMIT_DEFAULT, LIMIT_MAX, MARK_CLOSE, MARK_OPEN, kinds_parse, search_run
from hub_search.sources import KINDS
from hub_tools import args as A
from hub_tools import params as P
from hub_tools import schema
from hub_tools.params import Param
from hub_tools.schema import result, rows
from hub_tools.tool import Tool

# One query string value in REST, so one text in every transport: "task,completion".
_KINDS_PATTERN = f"^\\s*({'|'.join(KINDS)})\\s*(,\\s*({'|'.join(KINDS)})\\s*)*$"


def _kinds() -> Param:
    published = {
        **schema.string(f"Only these kinds, separated by commas: {', '.join(KINDS)} (default: all).", max_length=100),
        "pattern": _KINDS_PATTERN,
    }
    return Param(published, kinds_parse)


def _results(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {"results": found}


def specs() -> list[Tool]:
    return [
        Tool(
            name="search",
            title="Search",
            description=(
                "Full-text search over the tasks (text, context, result), messages, completions and channel "
                'posts of your networks, best match first. Syntax: words (all must appear), "a phrase", '
                '-word or -"a phrase" to leave out, prefix* (at least 2 letters). Matching ignores case and '
                "accents; punctuation "
                f"separates words. Each result has a snippet with the matching words between {MARK_OPEN} and "
                f"{MARK_CLOSE}. Ranking looks at the newest 200 matches: add words, alias or since to reach "
                "further back."
            ),
            params={
                "query": P.text("What to look for (see the syntax above).", QUERY_MAX, required=True),
                "kinds": _kinds(),
                "alias": P.identifier(
                    "Only what concerns this agent: a task's agent, a message's recipient, a completion's "
                    "reporter, the posts of the channels it is in and its own. A channel that is not broadcast "
                    "is searched only by naming one of its members here, as channel_read reads it."
                ),
                "since": P.moment("Only what was written at or after this ISO 8601 time, e.g. 2026-04-12T10:00:00Z."),
                "network_id": A.NETWORK_ID,
                "limit": A.limit("results", LIMIT_MAX, LIMIT_DEFAULT),
            },
            service=search_run,
            render=_results,
            output=result(
                results=rows(
                    "Best match first, then newest: kind (task, message, completion, post), id (task_id, message "
                    "id, completion id, or a post's channel_id#seq), network_id, alias, created_at, title, "
                    "snippet, rank (higher is better; "
                    "compare ranks within one answer only)."
                )
            ),
            read_only=True,
        )
    ]
