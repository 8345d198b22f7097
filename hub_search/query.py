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
from collections import Counter
from dataclasses import dataclass

from hub_core.errors import unusable_argument

QUERY_MAX = 500  # characters
ITEMS_MAX = 16  # words, phrases and exclusions in one query
# Words in one phrase, in a whole query (its phrases' and exclusions' included), and the places one word
# takes in a query: the engines' work for each row matched grows with the places of the query's words in
# it (FTS5 walks them for every word of every phrase; PostgreSQL matches `<->` on them), so a word
# repeated in the query over posts of that word repeated took seconds; bounded well past what a search
# needs (issue 24).
PHRASE_WORDS_MAX = 8
QUERY_WORDS_MAX = 16
WORD_PLACES_MAX = 2
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


def folded_words(text: str, separator: str) -> tuple[str, str]:
    """The text's words as WORD finds them, each folded whole (fold), joined by the separator; and
    the text with every character that is no word character a space (as long as the text, so its
    words are found by str.split at the same places). Each distinct character is looked at once (and
    kept), then mapped everywhere at once in C (str.replace, or str.translate for many): a text beyond
    ASCII costs about what an ASCII one does, never a regular expression over it (issue 24)."""
    apart: dict[str, str] = {}
    folded: dict[str, str] = {}
    for char in set(text):
        to = _CHARS.get(char) or _char(char)
        if to == _NOT_A_WORD:
            apart[char] = " "
        elif to != char:
            folded[char] = to
    shape = _mapped(text, apart)
    return _mapped(separator.join(shape.split()), folded), shape


_NOT_A_WORD = "\x00"  # no word character, nor in the fold of one
_CHARS: dict[str, str] = {}  # a word character's fold, or _NOT_A_WORD
_CHARS_KEPT = 1 << 16  # characters kept: past that, the table starts again
_REPLACED_MAX = 48  # more characters to map than this: one translate pass rather than a replace each


def _char(char: str) -> str:
    global _CHARS
    if len(_CHARS) >= _CHARS_KEPT:
        _CHARS = {}
    to = fold(char) if WORD.fullmatch(char) else _NOT_A_WORD
    _CHARS[char] = to
    return to


def _mapped(text: str, mapping: dict[str, str]) -> str:
    if len(mapping) > _REPLACED_MAX:
        return text.translate(str.maketrans(mapping))
    for char, to in mapping.items():
        text = text.replace(char, to)
    return text


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

    def tsquery_rank(self) -> str:
        """The tsquery ts_rank weighs: each wanted word once, ORed (a phrase's last word keeps its
        prefix). Every row the query matches has them all; ORed, ts_rank counts their places (term
        frequency, as bm25 does), linear work, where ts_rank of the query itself weighs the distance
        between every pair of its words' places: 1.6 s a row for many words each frequent (issue 24)."""
        alone = [
            Phrase((word,), phrase.prefix and at == len(phrase.words) - 1)
            for phrase in self.wanted
            for at, word in enumerate(phrase.words)
        ]
        return " | ".join(phrase.tsquery() for phrase in dict.fromkeys(alone))


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
    if len(found) > PHRASE_WORDS_MAX:
        shown = raw if len(raw) <= 40 else raw[:40] + "…"
        raise _bad(
            f"has a phrase of {len(found)} words ({shown!r}; punctuation splits words): at most "
            f"{PHRASE_WORDS_MAX} in a row, so search its most telling part"
        )
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
        if phrase is not None and phrase not in (excluded if minus else wanted):  # twice means once
            (excluded if minus else wanted).append(phrase)
    if not wanted:
        raise _bad("has no word to look for (a - only leaves words out)" if excluded else "has no word to look for")
    if len(wanted) + len(excluded) > ITEMS_MAX:
        raise _bad(f"has more than {ITEMS_MAX} words, phrases and exclusions")
    count = sum(len(phrase.words) for phrase in (*wanted, *excluded))
    if count > QUERY_WORDS_MAX:
        raise _bad(f"has {count} words: at most {QUERY_WORDS_MAX} in one query, so keep the most telling")
    word, places = Counter(word for phrase in (*wanted, *excluded) for word in phrase.words).most_common(1)[0]
    if places > WORD_PLACES_MAX:
        raise _bad(f"has the word {word!r} {places} times: at most {WORD_PLACES_MAX} in one query, so give it fewer")
    return Query(tuple(wanted), tuple(excluded))
