"""search: one query over everything searchable in the caller's networks (hub_search.sources),
ranked, each hit with a snippet of its text where the words were found.

Design (docs/adr/0017-one-search-index.md): one denormalised table, SearchEntry, for every kind, so
one query, one index and one ranking cover them all, on PostgreSQL (tsvector + GIN) and on SQLite
(FTS5) alike (hub_search.engines); the query syntax is parsed once (hub_search.query). Snippets are
cut here, in Python, from the same words the index holds, so both engines show the same snippet.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from hub_agents.actors import Actor
from hub_channels.selectors import posts_past_age
from hub_core.errors import invalid_argument
from hub_core.formats import timestamp
from hub_search import engines
from hub_search.query import WORD, Phrase, Query, fold, parse
from hub_search.sources import KINDS

LIMIT_DEFAULT = 20
LIMIT_MAX = 100
# A hit is shown as its words around the first match: this many before it, this many in all.
SNIPPET_LEAD = 8
SNIPPET_WORDS = 32
# Highlights open and close with these: text that has them shows single guillemets instead, so a reader (the
# dashboard turns them into <mark> after escaping the rest) never mistakes the text for a highlight.
MARK_OPEN, MARK_CLOSE = "«", "»"
_IN_TEXT = {ord(MARK_OPEN): "\u2039", ord(MARK_CLOSE): "\u203a"}


def kinds_parse(name: str, value: object) -> list[str] | None:
    """`kinds`: a comma-separated list of kinds (one query string value in REST), or left out: all."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid_argument(name, f"must be text: kinds separated by commas, from {', '.join(KINDS)}")
    chosen = [kind.strip() for kind in value.split(",") if kind.strip()]
    unknown = [kind for kind in chosen if kind not in KINDS]
    if unknown or not chosen:
        raise invalid_argument(name, f"names kinds from {', '.join(KINDS)}, separated by commas (got {value!r})")
    return sorted(set(chosen), key=KINDS.index)


def search_run(
    *,
    actor: Actor,
    query: str,
    kinds: list[str] | None = None,
    alias: str | None = None,
    since: datetime | None = None,
    network_id: str | None = None,
    limit: int = LIMIT_DEFAULT,
    watching: bool = False,
) -> list[dict[str, Any]]:
    """The best matches in the networks the caller reads (or the one named), best first then newest.
    A channel's posts as channel_read shows them: a channel that is not broadcast only to one of its
    members named by `alias`; `watching` (the dashboard, not a tool argument): every channel's."""
    parsed = parse(query)
    networks = actor.readable_networks(network_id)
    if not networks:
        return []

    def found(count: int) -> list[Any]:
        return engines.run(
            parsed, network_ids=networks, kinds=kinds, alias=alias, since=since, limit=count, watching=watching
        )

    given = found(limit)
    entries = _without_aged_posts(given)
    if len(entries) < len(given):  # aged posts fell out of the answer: fill it up from all the candidates
        entries = _without_aged_posts(found(engines.CANDIDATES))[:limit]
    return [
        {
            "kind": entry.kind,
            "id": entry.object_id,
            "network_id": entry.network_id,
            "alias": entry.alias,
            "created_at": timestamp(entry.created_at),
            "title": entry.title,
            "snippet": snippet(entry.text, parsed),
            "rank": round(float(entry.score), 6),
        }
        for entry in entries
    ]


def _without_aged_posts(entries: list[Any]) -> list[Any]:
    """The entries but the posts past their channel's age limit, gone though their delete (the next
    post, or the sweep) may not have come yet."""
    posts = [entry.post_id for entry in entries if entry.post_id is not None]
    if not posts:
        return entries
    gone = posts_past_age(posts, now=timezone.now())
    return [entry for entry in entries if entry.post_id not in gone]


@dataclass(frozen=True)
class _Word:
    start: int
    end: int
    folded: str


def snippet(text: str, query: Query) -> str:
    """SNIPPET_WORDS words of the text around its first match, every matching word «marked»."""
    found = [_Word(m.start(), m.end(), fold(m.group())) for m in WORD.finditer(text)]
    marked = sorted({i for phrase in query.wanted for i in _matches(found, phrase)})
    if not found:
        return ""
    first = max(0, (marked[0] if marked else 0) - SNIPPET_LEAD)
    last = min(len(found), first + SNIPPET_WORDS) - 1
    start = found[first].start if first else 0
    end = found[last].end if last < len(found) - 1 else len(text)
    pieces: list[str] = ["…" if start else ""]
    cursor = start
    for i in (i for i in marked if first <= i <= last):
        pieces += [_plain(text[cursor : found[i].start]), MARK_OPEN, _plain(text[found[i].start : found[i].end])]
        pieces.append(MARK_CLOSE)
        cursor = found[i].end
    pieces += [_plain(text[cursor:end]), "…" if end < len(text) else ""]
    return " ".join("".join(pieces).split())


def _matches(found: list[_Word], phrase: Phrase) -> list[int]:
    """The positions of every word of every place the phrase occurs."""
    size = len(phrase.words)
    hits: list[int] = []
    for i in range(len(found) - size + 1):
        window = [word.folded for word in found[i : i + size]]
        exact, last = window[:-1] == list(phrase.words[:-1]), window[-1]
        wanted_last = phrase.words[-1]
        if exact and (last.startswith(wanted_last) if phrase.prefix else last == wanted_last):
            hits += range(i, i + size)
    return hits


def _plain(text: str) -> str:
    return text.translate(_IN_TEXT)
