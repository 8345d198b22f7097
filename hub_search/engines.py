"""The two full-text engines behind one search, each given the same parsed query (hub_search.query).

PostgreSQL: `hub_search_searchentry.tsv`, a stored generated column `to_tsvector('simple', terms)`
with a GIN index. The 'simple' configuration only lower-cases: the words are already those
hub_search.query made, so no stemming or stop words make PostgreSQL answer differently from SQLite.
The query is `to_tsquery('simple', ...)` of the compiled expression (SearchQuery's raw form) ranked
by `ts_rank(tsv, its words ORed, 1)` (length-normalised as bm25 is; term frequency only, linear work:
ts_rank of the query itself weighs the distances between every pair of its words' positions, 1.6 s a
row for a query of many words each frequent in a 64 KiB post; hub_search.query.Query.tsquery_rank).

SQLite: `hub_search_fts`, an FTS5 table over `terms` with this table as its external content (the
words are stored once), kept in step by triggers on hub_search_searchentry, ranked by bm25(). FTS5's
work for a row grows with the places of every word of every phrase (and bm25's with those places
times the phrases): hub_search.query bounds the words, and a word's places in a query, so that a
post of one word repeated costs no more than any other (issue 24).

Both rank only the CANDIDATES (200) newest matches of the caller's networks (after the kinds, alias and
since filters): a query of common words matches a good part of a million rows, and ranking them all
would cost a second; the newest few hundred are what a search of a working hub is after, and a narrower
query (more words, since, alias) reaches further back. The outer SQL is written here rather than with
the ORM because the ranking runs over that LIMITed subquery in FROM, which the ORM cannot express.
Rows come back through `SearchEntry.objects.raw`, with `score` (higher is better on both).
"""

from __future__ import annotations

import json
from datetime import datetime

from django.db import connection

from hub_channels.models import ChannelMember
from hub_search.models import SearchEntry
from hub_search.query import Query

CANDIDATES = 200

_TABLE = SearchEntry._meta.db_table
_MEMBERS = ChannelMember._meta.db_table
_COLUMNS = ("id", "network_id", "kind", "object_id", "alias", "created_at", "title", "text", "post_id")
_FIELDS = ", ".join(f"e.{column}" for column in _COLUMNS)
_CHOSEN = ", ".join(f"c.{column}" for column in _COLUMNS)


def run(
    query: Query,
    *,
    network_ids: list[str],
    kinds: list[str] | None,
    alias: str | None,
    since: datetime | None,
    limit: int,
    watching: bool = False,
) -> list[SearchEntry]:
    """The best `limit` entries for the query, best first, then newest first. `watching`: the
    dashboard's operators, who read every channel's posts; others read a channel that is not
    broadcast only as one of its members, named by `alias` (hub_search.sources)."""
    where, params = _filters(network_ids=network_ids, kinds=kinds, alias=alias, since=since, watching=watching)
    if connection.vendor == "postgresql":
        expression = query.tsquery()
        newest = "e.created_at" if _walk(expression, where, params) else "(e.created_at + interval '0 seconds')"
        sql = f"""
            SELECT {_CHOSEN}, ts_rank(c.tsv, to_tsquery('simple', %s), 1) AS score FROM (
                SELECT {_FIELDS}, e.tsv FROM {_TABLE} e
                WHERE e.tsv @@ to_tsquery('simple', %s) AND {where}
                ORDER BY {newest} DESC, e.id DESC LIMIT {CANDIDATES}
            ) c ORDER BY score DESC, c.created_at DESC, c.id DESC LIMIT %s
        """
        return list(SearchEntry.objects.raw(sql, [query.tsquery_rank(), expression, *params, limit]))
    sql = f"""
        SELECT {_CHOSEN}, c.score FROM (
            SELECT {_FIELDS}, -bm25(hub_search_fts) AS score
            FROM hub_search_fts JOIN {_TABLE} e ON e.id = hub_search_fts.rowid
            WHERE hub_search_fts MATCH %s AND {where}
            ORDER BY e.created_at DESC, e.id DESC LIMIT {CANDIDATES}
        ) c ORDER BY c.score DESC, c.created_at DESC, c.id DESC LIMIT %s
    """
    return list(SearchEntry.objects.raw(sql, [query.fts5(), *params, limit]))


# Fetching a match through the GIN index costs about this many times checking a row met on the walk
# down (network, created_at): a match is a page of its own, the walk reads each page once for its ~10
# rows. Measured by bench.search at 2M entries, the table in the OS cache but not in shared_buffers.
_FETCH_OVER_CHECK = 8.0


def _walk(expression: str, where: str, params: list[object]) -> bool:
    """Whether to find the newest matches by walking the entries newest first, checking each (cheap
    when matches are common: CANDIDATES / share rows), rather than fetching every match the GIN index
    lists (cheap when they are rare). PostgreSQL's planner estimates the matches well (its tsvector
    statistics) but, pricing both as random page reads, walks for matches far too rare to meet soon:
    a two-word query matching 0.3% of 2M entries took 55 ms on the walk, 10 ms through GIN. So the
    choice is made here, from the planner's own estimates (EXPLAIN, no execution: well under 1 ms);
    the GIN path orders by an expression the index cannot give, which leaves the planner only that."""
    matches = _estimated(
        f"SELECT 1 FROM {_TABLE} e WHERE e.tsv @@ to_tsquery('simple', %s) AND {where}", [expression, *params]
    )
    scope = _estimated(f"SELECT 1 FROM {_TABLE} e WHERE {where}", params)
    walked = CANDIDATES * scope / max(matches, 1)
    return walked < matches * _FETCH_OVER_CHECK


def _estimated(sql: str, params: list[object]) -> float:
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        (plan,) = cursor.fetchone()
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return float(plan[0]["Plan"]["Plan Rows"])


_ITS_CHANNELS = f"e.channel_id IN (SELECT m.channel_id FROM {_MEMBERS} m WHERE m.alias = %s)"


def _filters(
    *, network_ids: list[str], kinds: list[str] | None, alias: str | None, since: datetime | None, watching: bool
) -> tuple[str, list[object]]:
    clauses = [f"e.network_id IN ({', '.join(['%s'] * len(network_ids))})"]
    params: list[object] = list(network_ids)
    if kinds:
        clauses.append(f"e.kind IN ({', '.join(['%s'] * len(kinds))})")
        params += kinds
    if alias is not None:  # what concerns it, and the posts of the channels it is in
        clauses.append(f"(e.alias = %s OR {_ITS_CHANNELS})")
        params += [alias, alias]
    if not watching and alias is None:  # channel_read's rule: a members-only post only for a member
        clauses.append("NOT e.members_only")
    elif not watching:
        clauses.append(f"(NOT e.members_only OR {_ITS_CHANNELS})")
        params.append(alias)
    if since is not None:
        clauses.append("e.created_at >= %s")
        params.append(connection.ops.adapt_datetimefield_value(since))
    return " AND ".join(clauses), params


# The engines' own parts of the index, made by migration 0001 for the database it runs on.

POSTGRESQL_SQL = f"""
    ALTER TABLE {_TABLE} ADD COLUMN tsv tsvector
        GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, terms)) STORED;
    CREATE INDEX searchentry_tsv ON {_TABLE} USING gin (tsv);
"""


def sqlite_triggers_sql() -> list[str]:
    """The triggers that keep hub_search_fts in step with the entries (external content: a change
    deletes the old words by giving them back, then adds the new)."""
    add = "INSERT INTO hub_search_fts(rowid, terms) VALUES (new.id, new.terms);"
    drop = "INSERT INTO hub_search_fts(hub_search_fts, rowid, terms) VALUES ('delete', old.id, old.terms);"
    return [
        "DROP TRIGGER IF EXISTS hub_search_fts_insert",
        "DROP TRIGGER IF EXISTS hub_search_fts_delete",
        "DROP TRIGGER IF EXISTS hub_search_fts_update",
        f"CREATE TRIGGER hub_search_fts_insert AFTER INSERT ON {_TABLE} BEGIN {add} END",
        f"CREATE TRIGGER hub_search_fts_delete AFTER DELETE ON {_TABLE} BEGIN {drop} END",
        f"CREATE TRIGGER hub_search_fts_update AFTER UPDATE OF terms ON {_TABLE} BEGIN {drop} {add} END",
    ]


FTS5_TOKENIZER = "unicode61 remove_diacritics 0"  # the words are folded already (hub_search.query)

SQLITE_SQL = [
    f"CREATE VIRTUAL TABLE hub_search_fts USING fts5("
    f"terms, content='{_TABLE}', content_rowid='id', tokenize='{FTS5_TOKENIZER}')",
    *sqlite_triggers_sql(),
    # Entries written before the table existed (the backfill runs after this).
    "INSERT INTO hub_search_fts(hub_search_fts) VALUES ('rebuild')",
]


def install(schema_editor) -> None:
    """Migration 0001's engine part, for the database it runs on."""
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_SQL)
    elif vendor == "sqlite":
        for statement in SQLITE_SQL:
            schema_editor.execute(statement)
    else:
        raise NotImplementedError(f"hub_search has no full-text engine for {vendor}")


def uninstall(schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS searchentry_tsv; ALTER TABLE {_TABLE} DROP COLUMN IF EXISTS tsv")
    elif vendor == "sqlite":
        for statement in [*sqlite_triggers_sql()[:3], "DROP TABLE IF EXISTS hub_search_fts"]:
            schema_editor.execute(statement)
