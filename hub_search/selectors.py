"""search: one query over everything searchable in the caller's networks (hub_search.sources),
ranked, each hit with a snippet of its text where the words were found.

Design (docs/adr/0017-one-search-index.md): one denormalised table, SearchEntry, for every kind, so
one query, one index and one ranking cover them all, on PostgreSQL (tsvector + GIN) and on SQLite
(FTS5) alike (hub_search.engines); the query syntax is parsed once (hub_search.query). Snippets are
cut here, in Python, from the same words the index holds, so both engines show the same snippet.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from itertools import islice
from typing import Any

from django.utils import timezone

from hub_agents.actors import Actor
from hub_channels.selectors import posts_past_age
from hub_core.errors import invalid_argument
from hub_core.formats import timestamp
from hub_search import engines
from hub_search.query import WORD, WORDS_INDEXED, Phrase, Query, fold, folded_words, parse
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


# Of a text beyond ASCII, the most characters looked at for its match. Folding such a text costs some
# 50 ns a character (its distinct characters gathered, then mapped), so 100 hits of posts at the size
# limit in many scripts took a second; past this, a text's snippet is its start, unmarked (issue 24).
SCANNED_CHARS = 8_192


def snippet(text: str, query: Query) -> str:
    """SNIPPET_WORDS words of the text around its first match, every matching word «marked».

    Bounded work whatever the text and the query (issue 24): the first match is found by string search
    (linear, in C) over the text's folded words, never by comparing each place in the text with each
    phrase in Python; only the words around it are tokenised again, to mark what matches in view. A
    text beyond ASCII is looked at in its first SCANNED_CHARS characters only (ASCII maps in C at
    once, whatever its length)."""
    if len(text) <= SCANNED_CHARS or text.isascii():
        return _snippet(text, query)
    head = text[:SCANNED_CHARS]
    space = max(head.rfind(" "), head.rfind("\n"))  # not a word cut in two: its start might match a prefix
    cut = _snippet(head[:space] if space > SCANNED_CHARS // 2 else head, query)
    return cut if cut.endswith("…") else cut + "…"


def _snippet(text: str, query: Query) -> str:
    words = _Words(text)
    hit = words.first_hit(query.wanted)
    first = max(0, hit - SNIPPET_LEAD) if hit is not None else 0
    reach = max(len(phrase.words) for phrase in query.wanted)  # a phrase in view may begin before it
    since = max(0, first - reach + 1)
    view = list(islice(WORD.finditer(text, words.offset(since)), first + SNIPPET_WORDS + reach - since))
    if not view:
        return ""
    last = min(first + SNIPPET_WORDS, since + len(view)) - 1
    marked = _marked(view, since, query, first, last)
    start = view[first - since].start() if first else 0
    end = view[last - since].end() if since + len(view) - 1 > last else len(text)
    pieces: list[str] = ["…" if start else ""]
    cursor = start
    for i in marked:
        word = view[i - since]
        pieces += [_plain(text[cursor : word.start()]), MARK_OPEN, _plain(word.group()), MARK_CLOSE]
        cursor = word.end()
    pieces += [_plain(text[cursor:end]), "…" if end < len(text) else ""]
    return " ".join("".join(pieces).split())


def _marked(view: list[re.Match[str]], since: int, query: Query, first: int, last: int) -> list[int]:
    """The positions from first to last of every word of every place a wanted phrase occurs."""
    folded = _joined(fold(_SEPARATOR.join(word.group() for word in view)), _SEPARATOR)
    marked: set[int] = set()
    for phrase in query.wanted:
        for at in _places(folded, phrase, _SEPARATOR):
            marked.update(range(max(first, since + at), min(last, since + at + len(phrase.words) - 1) + 1))
    return sorted(marked)


# Words joined for string search: each after one separator, the last before one.
_SEPARATOR = "\x00"  # never in a folded word (fold of a word may hold a space: ﷺ)
_ASCII_WORDS = str.maketrans({chr(c): chr(c).lower() if chr(c).isalnum() else " " for c in range(128)})
# A text's match is looked for in this many words: twice the words the index holds, so its match is
# always in them (a word the index leaves out is over 100 characters).
SCANNED_WORDS = 2 * WORDS_INDEXED


def _joined(folded: str, separator: str) -> str:
    return separator + folded + separator


def _needle(phrase: Phrase, separator: str) -> str:
    needle = _joined(separator.join(phrase.words), separator)
    return needle[: -len(separator)] if phrase.prefix else needle


def _places(joined: str, phrase: Phrase, separator: str) -> Iterator[int]:
    """Where the phrase occurs in the joined words (word positions, overlapping places too)."""
    needle = _needle(phrase, separator)
    at = joined.find(needle)
    while at >= 0:
        yield joined.count(separator, 0, at)
        at = joined.find(needle, at + 1)


class _Words:
    """A text's words, folded as the index folds them (hub_search.query.fold), for string search."""

    def __init__(self, text: str) -> None:
        self.text = text
        # The text mapped character for character, in C: its words (lower-cased if ASCII), anything
        # else a space; and beyond ASCII, its words folded (hub_search.query.folded_words).
        self._folded: str | None = None
        if text.isascii():
            self._shape = text.translate(_ASCII_WORDS)
        else:
            self._folded, self._shape = folded_words(text, _SEPARATOR)
        self._hit: tuple[int, int] | None = None  # the first hit's word position and offset, if known

    def first_hit(self, phrases: tuple[Phrase, ...]) -> int | None:
        """The position of the first word of the earliest place any phrase occurs, if one does."""
        separator, joined, one_to_one = self._joined()
        hits = [at for phrase in phrases if (at := joined.find(_needle(phrase, separator))) >= 0]
        if not hits:
            return None
        at = min(hits)
        position = joined.count(separator, 0, at)
        if one_to_one is not None:  # the joined words are the mapped text's, one separator each
            self._hit = (position, one_to_one + at)
        return position

    def _joined(self) -> tuple[str, str, int | None]:
        """The first SCANNED_WORDS folded words, each after a separator, the last before one; and if
        they are the mapped text as it is (one space between words), where they begin in it."""
        if self._folded is not None:
            scanned = self._folded
            if scanned.count(_SEPARATOR) >= SCANNED_WORDS:
                scanned = _SEPARATOR.join(scanned.split(_SEPARATOR, SCANNED_WORDS)[:SCANNED_WORDS])
            return _SEPARATOR, _joined(scanned, _SEPARATOR), None
        words = self._shape.strip(" ")
        if "  " in words:
            return " ", _joined(" ".join(words.split()), " "), None
        return " ", _joined(words, " "), len(self._shape) - len(self._shape.lstrip(" "))

    def offset(self, position: int) -> int:
        """Where the word at this position starts in the text (past its last word: the text's end)."""
        if self._hit is not None and position <= self._hit[0]:  # back from the hit, a word at a time
            at = self._hit[1]
            for _ in range(self._hit[0] - position):
                at = self._shape.rfind(" ", 0, at - 1) + 1
            return at
        rest = self._shape.split(None, position)
        return len(self.text) - len(rest[-1]) if len(rest) > position else len(self.text)


def _plain(text: str) -> str:
    return text.translate(_IN_TEXT)
