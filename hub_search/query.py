"""The search syntax, parsed once in Python and compiled for each engine.

    deploy staging         every word must appear (in any order)
    "disk is full"         these words, next to each other, in this order
    -flaky  -"dry run"     leave out what has this word (or phrase)
    migrat*                a word that starts with this (at least 2 characters)

Words are what `terms()` makes of a text, on both sides of the index: letters and digits, lower-case,
accents dropped; everything else separates words. The index stores the words the same function
made of each text, so SQLite's FTS5 and PostgreSQL's tsvector see the very same words and answer the
same rows: neither engine's own tokenizer (PostgreSQL's would keep `report.pdf` or `a-b` whole) or
stemmer has a say. A bare word holding punctuation (`B-SECRET`, `hub_tasks.models`) is the phrase of
its parts, as the text's words are. Words only ever reach SQL as quoted tokens of [letters digits],
so no query can change the expression it compiles to.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from hub_core.errors import unusable_argument

QUERY_MAX = 500  # characters
ITEMS_MAX = 16  # words, phrases and exclusions in one query
WORD_MAX = 100  # longer words are not indexed (PostgreSQL refuses lexemes over 2 KB; nobody searches them)
WORDS_INDEXED = 16_000  # per text: tsvector positions end at 16,383
PREFIX_MIN = 2

WORD = re.compile(r"[^\W_]+")
_ITEM = re.compile(r'(-?)(?:"([^"]*)"|([^\s"]+))')


def fold(word: str) -> str:
    """Lower-case, accents dropped (é → e): NFKD splits them off as combining marks. Character by
    character, so words joined by a separator fold as each would (search snippets fold a text's words
    at once): the marks are found among the distinct characters and each is dropped in one pass."""
    lowered = unicodedata.normalize("NFKD", word).lower()  # lower-cased after: NFKD can make capitals (U+03D2)
    kept = unicodedata.normalize("NFKD", lowered)
    marks = [ch for ch in set(kept) if unicodedata.combining(ch)] if not kept.isascii() else []
    if len(marks) > _MARKS_REPLACED:
        kept = kept.translate(dict.fromkeys(map(ord, marks)))
    else:
        for mark in marks:
            kept = kept.replace(mark, "")
    return kept.replace("\u03c2", "\u03c3")  # FTS5 folds a final sigma to a sigma; PostgreSQL does not


_MARKS_REPLACED = 16  # more distinct marks than this: one translate pass rather than a pass each


def words(text: str) -> list[str]:
    """The words of a text as the index knows them, in order."""
    found: list[str] = []
    for match in WORD.finditer(text):
        word = match.group()
        found += [word.lower()] if word.isascii() else _pieces(fold(word))
    return [word for word in found if word and len(word) <= WORD_MAX]


def _pieces(folded: str) -> list[str]:
    """A folded word beyond ASCII, cut where either engine would cut it: NFKD can leave characters
    that are no word characters (½ → 1, U+2044, 2; ŀ → l·; Arabic ligatures → spaces), and PostgreSQL's parser
    takes no "other number" (category No: ௰, ৴) as a word character; FTS5 would. Both separate
    there; so do both at the few letters SQLite still takes for marks (tests/hub_search/
    test_engines_agree.py checks every code point against the database it runs on)."""
    spaced = "".join(" " if unicodedata.category(ch) == "No" or ord(ch) in _MARKS_ONCE else ch for ch in folded)
    return WORD.findall(spaced)


# Letters (Lo) today that SQLite's tokenizer, on Unicode 6.1's tables, still takes for the spacing
# marks they once were: New Tai Lue's vowel signs and tone marks, two Vedic signs.
_MARKS_ONCE = frozenset([*range(0x19B0, 0x19C1), 0x19C8, 0x19C9, 0x1CF2, 0x1CF3])


def terms(text: str) -> str:
    """What the index stores of a text: its words, space-separated (the first WORDS_INDEXED)."""
    return " ".join(words(text)[:WORDS_INDEXED])


@dataclass(frozen=True)
class Phrase:
    """One or more words in a row; `prefix`: the last one may go on (migrat* finds migration)."""

    words: tuple[str, ...]
    prefix: bool = False

    def fts5(self) -> str:
        return '"' + " ".join(self.words) + '"' + ("*" if self.prefix else "")

    def tsquery(self) -> str:
        parts = [f"'{word}'" for word in self.words]
        if self.prefix:
            parts[-1] += ":*"
        return "(" + " <-> ".join(parts) + ")"


@dataclass(frozen=True)
class Query:
    wanted: tuple[Phrase, ...]
    excluded: tuple[Phrase, ...] = ()

    def fts5(self) -> str:
        """An FTS5 MATCH expression: the wanted phrases ANDed, then each exclusion NOTed out."""
        expression = "(" + " AND ".join(phrase.fts5() for phrase in self.wanted) + ")"
        return expression + "".join(f" NOT {phrase.fts5()}" for phrase in self.excluded)

    def tsquery(self) -> str:
        """A `to_tsquery('simple', ...)` expression of the same meaning."""
        return " & ".join([*(p.tsquery() for p in self.wanted), *(f"!{p.tsquery()}" for p in self.excluded)])


def _bad(problem: str) -> Exception:
    return unusable_argument("query", problem)


def _phrase(raw: str, *, quoted: bool) -> Phrase | None:
    prefix = not quoted and raw.endswith("*")
    found = words(raw.rstrip("*") if prefix else raw)
    if not found:
        if any(match.group() for match in WORD.finditer(raw)):
            # No text holds a word that long in the index: the phrase matches nothing (not an error:
            # the query is well-formed).
            return Phrase(("z" * (WORD_MAX + 1),), False)
        return None  # punctuation only: nothing to look for, as in the texts
    if prefix and len(found[-1]) < PREFIX_MIN:
        raise _bad(f"needs at least {PREFIX_MIN} letters before a * (got {raw!r})")
    return Phrase(tuple(found), prefix)


def parse(text: str) -> Query:
    """The query, or invalid_argument naming `query` for syntax that means nothing."""
    if text.count('"') % 2:
        raise _bad('has a " without its closing " (quote a phrase like "disk is full")')
    wanted: list[Phrase] = []
    excluded: list[Phrase] = []
    for match in _ITEM.finditer(text):
        minus, quoted, bare = match.groups()
        if bare == "-" and not minus:  # "--" is punctuation, as in a text
            raise _bad("has a - with nothing after it (write -word to leave out what has word)")
        phrase = _phrase(quoted if quoted is not None else bare, quoted=quoted is not None)
        if phrase is not None:
            (excluded if minus else wanted).append(phrase)
    if not wanted:
        raise _bad("has no word to look for (a - only leaves words out)" if excluded else "has no word to look for")
    if len(wanted) + len(excluded) > ITEMS_MAX:
        raise _bad(f"has more than {ITEMS_MAX} words, phrases and exclusions")
    return Query(tuple(wanted), tuple(excluded))
