"""Search answers fast whatever the texts and the query (issue 24, item 14): a hit's snippet is cut with
bounded work (the first match found by string search over the text's folded words, only the words in
view looked at again), so a search answering 100 broadcast posts at a channel's size limit (64 KiB)
takes well under half a second, and the snippet still shows the match wherever the index found it.
Runs on both databases."""

from __future__ import annotations

import random
import time

import pytest

from hub_agents.services import token_create
from hub_channels import limits
from hub_search.query import PHRASE_WORDS_MAX, QUERY_WORDS_MAX, WORD_PLACES_MAX
from hub_search.selectors import SNIPPET_WORDS
from hub_tools.tools import TOOLS_BY_NAME
from tests.helpers.calls import channel_create, channel_post
from tests.helpers.mcp import call as mcp_call
from tests.helpers.rest import assert_refused

pytestmark = pytest.mark.django_db


def search(actor, query: str, **arguments) -> tuple[list[dict], float]:
    """The answer, and the fastest of three runs: a bound on the work, not on what else the machine
    (two test workers, say) was doing during one of them."""
    took = []
    for _ in range(3):
        started = time.perf_counter()
        answer = TOOLS_BY_NAME["search"].run(actor, {"query": query, **arguments})
        took.append(time.perf_counter() - started)
        assert answer["ok"] is True, answer
    return answer["results"], min(took)


def broadcast(actor, text: str, posts: int) -> None:
    news = channel_create(actor=actor, name="news", alias="lead", type="broadcast")["channel_id"]
    for _ in range(posts):
        channel_post(actor=actor, channel_id=news, alias="lead", content=text)


def at_the_size_limit(word: str, *, near_the_end: str = "") -> str:
    """A post of the word repeated to the size limit, `near_the_end` among its last words."""
    ending = f" {near_the_end} end" if near_the_end else ""
    count = (limits.MESSAGE_BYTES_DEFAULT - len(ending.encode())) // len(f"{word} ".encode())
    text = " ".join([word] * count) + ending
    return text + " " * (limits.MESSAGE_BYTES_DEFAULT - len(text.encode()))


@pytest.mark.slow  # a hundred posts of 64 KiB indexed: seconds
def test_a_hundred_hits_at_the_size_limit_answer_within_half_a_second_marking_the_match_at_the_end(agent):
    text = at_the_size_limit("somewhere", near_the_end="Needle")
    assert len(text.encode()) == limits.MESSAGE_BYTES_DEFAULT
    broadcast(agent, text, posts=100)

    results, took = search(agent, "needle", limit=100)

    assert len(results) == 100
    assert {row["snippet"] for row in results} == {"…" + "somewhere " * 8 + "«Needle» end"}
    assert took < 0.5, f"100 hits at the size limit took {took:.2f} s"


def test_a_phrase_of_the_one_word_of_posts_at_the_size_limit_marks_its_match(agent):
    """The attack of issue 24 (a 249-word phrase over posts of its one word took 12-13 s), within the
    query's bounds: the word as often as a query may give it."""
    broadcast(agent, at_the_size_limit("a"), posts=4)
    phrase = '"' + " ".join(["a"] * WORD_PLACES_MAX) + '"'

    results, _ = search(agent, phrase, limit=100)

    assert len(results) == 4
    assert results[0]["snippet"] == " ".join(["«a»"] * 32) + "…"


_PAIRS = [a + b for a in "bcdfghjk" for b in "aeiou"]  # 40 distinct two-letter words


def _phrases(words: list[str]) -> str:
    return " ".join(
        '"' + " ".join(words[at : at + PHRASE_WORDS_MAX]) + '"' for at in range(0, len(words), PHRASE_WORDS_MAX)
    )


@pytest.mark.slow  # a hundred posts of 64 KiB indexed: seconds
@pytest.mark.parametrize(
    ("repeated", "near_the_end", "query", "snippet_starts"),
    [
        pytest.param(
            "été", "Aiguille", "aiguille", "été été", id="words beyond ASCII, the match past the scanned part"
        ),
        pytest.param(
            "a",
            "",
            '"' + " ".join(["a"] * WORD_PLACES_MAX) + '"',
            "«a» «a»",
            id="one word repeated, the most places a query gives it",
        ),
        pytest.param(
            " ".join(_PAIRS[:QUERY_WORDS_MAX]),
            "",
            _phrases(_PAIRS[:QUERY_WORDS_MAX]),
            "«ba» «be»",
            id="the most distinct words a query holds in its longest phrases, each frequent",
        ),
        pytest.param(
            " ".join(_PAIRS[:QUERY_WORDS_MAX]),
            "",
            " ".join(_PAIRS[:QUERY_WORDS_MAX]),
            "«ba» «be»",
            id="the most distinct words a query holds each alone, each frequent",
        ),
    ],
)
def test_the_worst_queries_over_a_hundred_posts_at_the_size_limit_answer_within_half_a_second(
    agent, repeated, near_the_end, query, snippet_starts
):
    """Issue 24: beyond ASCII each post's words were found by a regular expression (1 s for 100 hits);
    FTS5 walks every place of every phrase word, and bm25 every place of every phrase times the
    phrases (2.5 s for `a` given 16 times over posts of `a`); PostgreSQL's ts_rank weighed the distance
    between every pair of the query's words' places (3 s for 24 distinct words each frequent)."""
    broadcast(agent, at_the_size_limit(repeated, near_the_end=near_the_end), posts=100)
    search(agent, query, limit=100)  # the first search of a text beyond ASCII maps its characters once

    results, took = search(agent, query, limit=100)

    assert len(results) == 100
    assert results[0]["snippet"].startswith(snippet_starts), results[0]["snippet"]
    assert took < 0.5, f"100 hits at the size limit took {took:.2f} s"


@pytest.mark.slow  # a hundred posts of 64 KiB indexed: seconds
def test_a_hundred_posts_in_many_scripts_answer_within_half_a_second(agent):
    """Each post its own mix of capitals and accented letters of several scripts: every character of
    it must be mapped (folded) one by one, the costliest text there is to look through (issue 24)."""
    letters = [
        chr(c) for c in [*range(0xC0, 0x17F), *range(0x391, 0x3A9), *range(0x410, 0x42F), *range(0x1E00, 0x1EFF)]
    ]
    letters = [c for c in letters if c.isalpha()]
    pick = random.Random(24)
    news = channel_create(actor=agent, name="news", alias="lead", type="broadcast")["channel_id"]
    for _ in range(100):
        mix = pick.sample(letters, 200)
        words = ["".join(pick.choice(mix) for _ in range(pick.randint(2, 7))) for _ in range(9_000)]
        words.insert(100, "needle")
        text = " ".join(words).encode()[: limits.MESSAGE_BYTES_DEFAULT].decode(errors="ignore")
        channel_post(actor=agent, channel_id=news, alias="lead", content=text)

    results, took = search(agent, "needle", limit=100)

    assert len(results) == 100
    assert all("«needle»" in row["snippet"] for row in results)  # in the part looked at: marked
    assert took < 0.5, f"100 hits in many scripts took {took:.2f} s"


def test_past_the_scanned_part_of_a_text_beyond_ascii_its_snippet_is_its_start(agent):
    text = " ".join(["Été"] * 4_000) + " Aiguille fin"
    broadcast(agent, text, posts=1)

    (row,), _ = search(agent, "aiguille")

    assert row["snippet"] == " ".join(["Été"] * SNIPPET_WORDS) + "…"


_PHRASE_TOO_LONG = f"at most {PHRASE_WORDS_MAX} in a row, so search its most telling part"


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        (
            '"' + " ".join(["a"] * 249) + '"',
            "a phrase of 249 words ('a a a a a a a a a a a a a a a a a a a a …'; punctuation splits words): "
            + _PHRASE_TOO_LONG,
        ),
        ("-".join(["a"] * (PHRASE_WORDS_MAX + 1)), f"a phrase of {PHRASE_WORDS_MAX + 1} words"),
        ('"a a" a', f"has the word 'a' {WORD_PLACES_MAX + 1} times: at most {WORD_PLACES_MAX} in one query"),
        (
            _phrases(_PAIRS[: QUERY_WORDS_MAX + 1]),
            f"has {QUERY_WORDS_MAX + 1} words: at most {QUERY_WORDS_MAX} in one query, so keep the most telling",
        ),
    ],
)
def test_a_query_past_its_bounds_is_refused_saying_what_to_do_on_mcp_and_rest(client, network, query, problem):
    _, raw = token_create(network=network, role="member", name="searcher")

    over_mcp = mcp_call(client, "search", {"query": query}, token=raw)["structuredContent"]
    over_rest = client.get("/api/v1/search", {"query": query}, headers={"Authorization": f"Bearer {raw}"})

    assert (over_mcp["ok"], over_mcp["code"], over_mcp["field"]) == (False, "invalid_argument", "query")
    assert problem in over_mcp["message"]
    assert assert_refused(over_rest, 409, "invalid_argument", field="query")["message"] == over_mcp["message"]


def test_a_phrase_given_twice_counts_once(agent):
    broadcast(agent, "disk is full " * 3, posts=1)

    results, _ = search(agent, " ".join(['"disk is full"'] * 4), limit=100)

    assert [row["snippet"] for row in results] == [" ".join(["«disk» «is» «full»"] * 3)]
