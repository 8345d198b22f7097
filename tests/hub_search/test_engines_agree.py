"""Both engines see exactly the words hub_search.query makes, for every character there is: each
code point Python takes for a word character, between two letters, is indexed by the database this
runs on (PostgreSQL's 'simple' parser, or SQLite's FTS5 tokenizer as the index uses it) as the very
words `words()` made of it. Where the two engines would cut a word differently (other numbers,
what NFKD leaves, letters SQLite still takes for marks), `words()` cuts it for both, so SQLite and
PostgreSQL answer the same rows whatever the text."""

from __future__ import annotations

import sys

import pytest
from django.db import connection

from hub_search.engines import FTS5_TOKENIZER
from hub_search.query import WORD, words

pytestmark = [pytest.mark.django_db, pytest.mark.slow]  # a few seconds: 133,000 code points


def texts() -> list[str]:
    chars = (chr(cp) for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF)
    return [" ".join(words(f"x{ch}y")) for ch in chars if WORD.fullmatch(ch)]


def indexed_postgresql(batch: list[str]) -> list[set[str]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT tsvector_to_array(to_tsvector('simple', t)) FROM unnest(%s::text[]) t", [batch])
        return [set(row[0]) for row in cursor.fetchall()]


def indexed_sqlite(batch: list[str]) -> list[set[str]]:
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE VIRTUAL TABLE temp.agree USING fts5(t, tokenize='{FTS5_TOKENIZER}')")
        cursor.execute("CREATE VIRTUAL TABLE temp.agree_words USING fts5vocab(temp, agree, instance)")
        cursor.executemany("INSERT INTO temp.agree(rowid, t) VALUES (%s, %s)", list(enumerate(batch)))
        cursor.execute("SELECT doc, term FROM temp.agree_words")
        found: list[set[str]] = [set() for _ in batch]
        for doc, term in cursor.fetchall():
            found[doc].add(term)
        cursor.execute("DROP TABLE temp.agree_words")
        cursor.execute("DROP TABLE temp.agree")
        return found


def test_the_database_indexes_exactly_the_words_python_made_of_every_character():
    made = texts()
    assert len(made) > 100_000
    indexed = indexed_postgresql if connection.vendor == "postgresql" else indexed_sqlite
    differ = []
    for start in range(0, len(made), 5000):
        batch = made[start : start + 5000]
        differ += [
            (text, sorted(got)) for text, got in zip(batch, indexed(batch), strict=True) if set(text.split()) != got
        ]
    assert differ == []
