"""The search tools' specs (issue 18), gathered by hub_tools.tools after the hub's other own tools."""

from __future__ import annotations

from typing import Any

from hub_agents.identity import MEMBER
from hub_search.query import PHRASE_WORDS_MAX, QUERY_MAX, QUERY_WORDS_MAX, WORD_PLACES_MAX
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
        **schema.string(f"Only these kinds, comma-separated: {', '.join(KINDS)} (default: all).", max_length=100),
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
                "Full-text search over the tasks, messages, completions and channel posts of your networks, "
                'best match first. Syntax: words (all must appear), "a phrase", -word or -"a phrase" to leave '
                "out, prefix* (2 letters or more); case and accents are ignored, punctuation splits words. "
                f"Snippets mark matches {MARK_OPEN}like this{MARK_CLOSE}. Ranking looks at the newest 200 "
                "matches: add words, alias or since to reach further back."
            ),
            params={
                "query": P.text(
                    f"What to look for (the syntax above): at most {QUERY_WORDS_MAX} words, {PHRASE_WORDS_MAX} in a "
                    f"phrase, a word at most {WORD_PLACES_MAX} times.",
                    QUERY_MAX,
                    required=True,
                ),
                "kinds": _kinds(),
                "alias": P.identifier(
                    "Only what concerns this agent (its tasks, messages, completions, channels' posts); a "
                    "channel that is not broadcast is searched only by naming one of its members."
                ),
                "since": P.moment("Only what was written at or after this ISO 8601 time."),
                "network_id": A.NETWORK_ID,
                "limit": A.limit("results", LIMIT_MAX, LIMIT_DEFAULT),
            },
            callers={"alias": MEMBER},
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
