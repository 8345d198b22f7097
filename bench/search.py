"""Search at scale (issue 18): 1,000,000 tasks and 1,000,000 messages in one network, then two-word
queries through the selector (hub_search.selectors.search_run: parse, the ranked query, snippets).

The texts are written with set-based SQL: 8 to 25 words each from a vocabulary of ~1,500, drawn
Zipf-like (a few words are in most texts, most words in few), as a fleet's task texts are. Each query
is two words taken from one stored text, so every query finds something and many pair a common word
with another: the expensive case for ranking. The index is filled the way the hub fills it (the same
`terms`: the texts are lower-case words already), with its GIN index built after the rows.

In bench/run it is the `search` phase, on the run's PostgreSQL database. Alone:

    .venv/bin/python -m bench.search                      # PostgreSQL, database commhub_bench_search
    .venv/bin/python -m bench.search --sqlite --rows 100000  # the embedded default, FTS5
    .venv/bin/python -m bench.search --posts [--sqlite]      # 100 hits at the post size limit (issue 24)

--posts: 100 broadcast posts at a channel's size limit (64 KiB) answering one query at limit=100, so
each answer cuts 100 snippets from 64 KiB texts (hub_search.selectors.snippet): the match near the
end of each, the words short (the most words a post holds), ASCII and beyond; and issue 24's attack,
the most places a query gives one word, over posts of that word repeated (issue 24's attack: FTS5
walks every place of every phrase word); the longest phrase, and the most distinct words a query holds,
over posts of them repeated (each ~1,000 times or more: the ranking's work). The figure is the best of 5.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.load import Row

QUERIES = 200
LIMIT = 20
_BASE = """
deploy staging production cluster database migration schema index query cache redis postgres sqlite
server client request response timeout retry backoff queue worker task agent session token network
build test suite failure flaky error warning exception stack trace log metric alert dashboard page
api endpoint route handler view template model field column table row lock transaction commit
rollback branch merge rebase review patch diff release version tag pipeline runner docker image
container kubernetes pod node service ingress secret config setting env variable file path module
package import dependency upgrade downgrade pin lint format type check coverage benchmark latency
throughput memory cpu disk network socket stream event message reply broadcast inbox channel thread
search parser lexer compiler runtime interpreter function method class object instance list dict
string number integer float boolean null value key hash map set array loop iterator generator
async await future promise callback signal trigger hook plugin extension feature flag toggle option
user account role permission access owner admin viewer member invite login logout password reset
email notification webhook payload header body json yaml toml csv report export import backup
restore snapshot volume mount storage bucket object blob upload download sync async fetch push pull
fix bug issue ticket story epic sprint plan estimate deadline priority urgent blocked waiting done
refactor rename move split extract inline simplify clean remove delete add create update read write
open close start stop restart pause resume cancel expire renew lease claim assign reassign approve
""".split()
_SUFFIXES = ("", "s", "ed", "ing", "er")


def vocabulary() -> list[str]:
    """~1,500 distinct words: the base words and their usual endings, shuffled once (seeded) so the
    common ones are spread over the list, not the first base words."""
    words = sorted({word + suffix for word in _BASE for suffix in _SUFFIXES})
    random.Random(18).shuffle(words)
    return words


# A word's index: floor(n * u^2.5) for u uniform, so low indexes are drawn far more often (Zipf-like).
# The subquery names the row's i, so it is run for each row (with its own length), not once.
def _text(salt: int) -> str:
    return f"""array_to_string(ARRAY(
        SELECT (%(words)s::text[])[1 + floor(%(n)s * power(random(), 2.5))::int]
        FROM generate_series(1, 8 + (i::bigint * 7919 + {salt}) %% 18)), ' ')"""


SEED_POSTGRESQL = [
    f"""
    INSERT INTO hub_tasks_task (task_id, network_id, from_name, to_name, priority, status, content,
        requires_response, created_by, sender_key, created_at, expires_at, max_attempts, on_lost,
        retry_backoff_seconds)
    SELECT md5('st' || i)::uuid::text, %(network)s, 'lead', 'agent-' || (i %% 1000), 'normal', 'replied',
        {_text(0)}, true, 'bench', 'bench', now() - make_interval(secs => i),
        now() + interval '1 day', 1, 'requeue', 30
    FROM generate_series(1, %(rows)s) AS i
    """,
    f"""
    INSERT INTO hub_tasks_inboxmessage (id, network_id, to_alias, type, priority, content, from_session, created_at)
    SELECT md5('sm' || i)::uuid::text, %(network)s, 'agent-' || (i %% 1000), 'message', 'normal',
        {_text(1)}, 'lead', now() - make_interval(secs => i)
    FROM generate_series(1, %(rows)s) AS i
    """,
    # The index, as hub_search.sources writes it; its GIN index is built once, after the rows.
    "DROP INDEX IF EXISTS searchentry_tsv",
    """
    INSERT INTO hub_search_searchentry (network_id, kind, object_id, alias, created_at, title, text, terms,
        members_only)
    SELECT network_id, 'task', task_id, to_name, created_at, left(content, 120), content, content, false
    FROM hub_tasks_task WHERE network_id = %(network)s
    """,
    """
    INSERT INTO hub_search_searchentry (network_id, kind, object_id, alias, created_at, title, text, terms,
        members_only)
    SELECT network_id, 'message', id, to_alias, created_at, left(content, 120), content, content, false
    FROM hub_tasks_inboxmessage WHERE network_id = %(network)s
    """,
    "SET maintenance_work_mem = '1GB'",
    "CREATE INDEX searchentry_tsv ON hub_search_searchentry USING gin (tsv)",
]


def seed_postgresql(network_id: str, *, rows: int) -> float:
    from django.db import connection

    started = time.perf_counter()
    words = vocabulary()
    values = {"network": network_id, "rows": rows, "words": words, "n": len(words)}
    with connection.cursor() as cursor:
        for statement in SEED_POSTGRESQL:
            cursor.execute(statement, values)
        for table in ("hub_tasks_task", "hub_tasks_inboxmessage", "hub_search_searchentry"):
            cursor.execute(f"VACUUM ANALYZE {table}")
    return time.perf_counter() - started


def seed_sqlite(network_id: str, *, rows: int) -> float:
    """SQLite has no generate_series worth the name: the rows are made here and inserted in bulk, the
    FTS5 table filled by hub_search's triggers as the hub fills it."""
    from django.db import connection, transaction

    started = time.perf_counter()
    words, rng = vocabulary(), random.Random(18)
    now = time.time()

    def text() -> str:
        return " ".join(words[int(len(words) * rng.random() ** 2.5)] for _ in range(8 + rng.randrange(18)))

    with transaction.atomic(), connection.cursor() as cursor:
        for kind in ("task", "message"):
            batch = []
            for i in range(rows):
                body = text()
                stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(now - i))
                batch.append((network_id, kind, f"{kind}-{i}", f"agent-{i % 1000}", stamp, body[:120], body, body))
            cursor.executemany(
                "INSERT INTO hub_search_searchentry (network_id, kind, object_id, alias, created_at, title, text,"
                " terms) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                batch,
            )
    return time.perf_counter() - started


def queries(count: int = QUERIES) -> list[str]:
    """Two distinct words of stored texts (sampled, seeded): what someone who saw a text looks for."""
    from hub_search.models import SearchEntry

    rng = random.Random(7)
    top = SearchEntry.objects.order_by("-id").values_list("id", flat=True).first() or 0
    found: list[str] = []
    while len(found) < count:
        text = SearchEntry.objects.filter(id=rng.randrange(1, top + 1)).values_list("terms", flat=True).first()
        words = sorted(set((text or "").split()))
        if len(words) >= 2:
            found.append(" ".join(rng.sample(words, 2)))
    return found


def measure(actor: Any, texts: list[str], *, note: str) -> Row:
    from hub_search.selectors import search_run

    row = Row("search", f"search, two words, limit {LIMIT}", 1, note=note)
    search_run(actor=actor, query=texts[0], limit=LIMIT)  # warm: the first query loads the catalog
    matched = 0
    for text in texts:
        started = time.perf_counter()
        try:
            found = search_run(actor=actor, query=text, limit=LIMIT)
        except Exception:  # a failed query is counted, not fatal to the run
            row.errors += 1
            continue
        row.latencies.append(time.perf_counter() - started)
        row.requests += 1
        matched += bool(found)
    row.facts = {"rows": float(len(texts)), "answered": float(matched)}
    return row


def run(*, rows: int) -> list[Row]:
    """bench/run's `search` phase: its own network in the run's (PostgreSQL) database."""
    from hub_agents.services import network_create, token_authenticate, token_create

    network, _ = network_create(name="search-bench", by="bench")
    actor = token_authenticate(raw=token_create(network=network, name="searcher", by="bench")[1])
    took = seed_postgresql(network.pk, rows=rows)
    print(f"preloaded {rows:,} tasks and {rows:,} messages for search in {took:.0f} s")
    return [measure(actor, queries(), note=f"{rows:,} tasks + {rows:,} messages, PostgreSQL")]


POSTS = 100


def _post_cases() -> list[tuple[str, str, str, str]]:
    """Each case: its name, what the posts repeat, what is near their end, the query."""
    from hub_search.query import PHRASE_WORDS_MAX, QUERY_WORDS_MAX, WORD_PLACES_MAX

    distinct = [a + b for a in "abcdefghijklmnopqrstuvwxyz" for b in "abcdefghijklmnopqrstuvwxyz"][:QUERY_WORDS_MAX]
    phrases = [distinct[at : at + PHRASE_WORDS_MAX] for at in range(0, len(distinct), PHRASE_WORDS_MAX)]
    return [
        ("a match near the end of the indexed words, short words", "ab", "Needle", "needle"),
        ("a match near the end of the indexed words, words beyond ASCII", "été", "Aiguille", "aiguille"),
        (
            f"the longest phrase a query holds ({PHRASE_WORDS_MAX} distinct words), over posts of them",
            " ".join(distinct[:PHRASE_WORDS_MAX]),
            "",
            '"' + " ".join(distinct[:PHRASE_WORDS_MAX]) + '"',
        ),
        (
            f"the most places a query gives one word ({WORD_PLACES_MAX}), over posts of it",
            "a",
            "",
            '"' + " ".join(["a"] * WORD_PLACES_MAX) + '"',
        ),
        (
            f"the most words a query holds ({QUERY_WORDS_MAX}, distinct), each in every post ~1,000 times",
            " ".join(distinct),
            "",
            " ".join('"' + " ".join(phrase) + '"' for phrase in phrases),
        ),
        (
            f"the most words a query holds ({QUERY_WORDS_MAX}, distinct, each alone), each in every post ~1,000 times",
            " ".join(distinct),
            "",
            " ".join(distinct),
        ),
    ]


def at_the_size_limit(word: str, near_the_end: str) -> str:
    """The word repeated to the size limit, `near_the_end` ten words before the last word the index
    holds (hub_search.query.WORDS_INDEXED) or the text's end."""
    from hub_channels.limits import MESSAGE_BYTES_DEFAULT
    from hub_search.query import WORDS_INDEXED

    count = (MESSAGE_BYTES_DEFAULT - len(f"{near_the_end} ".encode())) // len(f"{word} ".encode())
    words = [word] * count
    if near_the_end:
        words.insert(min(count, WORDS_INDEXED) - 10, near_the_end)
    return " ".join(words)


def posts(*, note: str) -> None:
    """Each case in a network of its own: POSTS posts at the size limit, then the query 5 times."""
    from hub_agents.services import network_create, token_authenticate, token_create
    from hub_channels.services import channel_create, channel_post
    from hub_search.selectors import search_run

    for number, (name, word, near_the_end, query) in enumerate(_post_cases()):
        network, _ = network_create(name=f"search-posts-{number}", by="bench")
        actor = token_authenticate(raw=token_create(network=network, name="searcher", by="bench")[1])
        channel = channel_create(actor=actor, name="news", alias="lead", type="broadcast")
        text = at_the_size_limit(word, near_the_end)
        for _ in range(POSTS):
            channel_post(actor=actor, channel_id=channel["channel_id"], alias="lead", content=text)
        took = []
        for _ in range(5):
            started = time.perf_counter()
            found = search_run(actor=actor, query=query, limit=POSTS)
            took.append(time.perf_counter() - started)
        print(
            f"search, {len(found)} hits of {len(text.encode()):,}-byte posts, limit {POSTS} ({note}): "
            f"{min(took) * 1000:.0f} ms, {name}"
        )


def _standalone() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.search", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="tasks, and as many messages (default 1M)")
    parser.add_argument("--sqlite", action="store_true", help="the embedded default (a fresh SQLite file)")
    parser.add_argument("--posts", action="store_true", help=f"only {POSTS} hits of posts at the size limit")
    args = parser.parse_args()
    if args.sqlite:
        path = Path(tempfile.gettempdir()) / "commhub_bench_search.sqlite3"
        path.unlink(missing_ok=True)
        os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    else:
        import psycopg

        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as admin:
            admin.execute("DROP DATABASE IF EXISTS commhub_bench_search WITH (FORCE)")
            admin.execute("CREATE DATABASE commhub_bench_search")
        os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/commhub_bench_search"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "commhub.settings")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/9")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    if args.posts:
        posts(note="SQLite FTS5" if args.sqlite else "PostgreSQL")
        return
    if args.sqlite:
        from hub_agents.services import network_create, token_authenticate, token_create

        network, _ = network_create(name="search-bench", by="bench")
        actor = token_authenticate(raw=token_create(network=network, name="searcher", by="bench")[1])
        took = seed_sqlite(network.pk, rows=args.rows)
        print(f"preloaded {args.rows:,} tasks and {args.rows:,} messages for search in {took:.0f} s")
        found = [measure(actor, queries(), note=f"{args.rows:,} + {args.rows:,} entries, SQLite FTS5")]
    else:
        found = run(rows=args.rows)
    for row in found:
        print(
            f"{row.name} ({row.note}): p50 {row.percentile(0.5):.1f} ms, p99 {row.percentile(0.99):.1f} ms, "
            f"max {max(row.latencies) * 1000:.1f} ms; {row.requests} queries, {int(row.facts['answered'])} "
            f"with results, {row.errors} errors"
        )


if __name__ == "__main__":
    _standalone()
