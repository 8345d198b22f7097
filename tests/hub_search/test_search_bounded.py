"""Search answers fast whatever the texts and the query (issue 24, item 14): a hit's snippet is cut with
bounded work (the first match found by string search over the text's folded words, only the words in
view looked at again), so a search answering 100 broadcast posts at a channel's size limit (64 KiB)
takes well under half a second, and the snippet still shows the match wherever the index found it.
Runs on both databases."""

from __future__ import annotations

import time

import pytest

from hub_channels import limits
from hub_search.query import QUERY_MAX
from hub_tools.tools import TOOLS_BY_NAME
from tests.helpers.calls import channel_create, channel_post

pytestmark = pytest.mark.django_db


def search(actor, query: str, **arguments) -> tuple[list[dict], float]:
    started = time.perf_counter()
    answer = TOOLS_BY_NAME["search"].run(actor, {"query": query, **arguments})
    return answer["results"], time.perf_counter() - started


def broadcast(actor, text: str, posts: int) -> None:
    news = channel_create(actor=actor, name="news", alias="lead", type="broadcast")["channel_id"]
    for _ in range(posts):
        channel_post(actor=actor, channel_id=news, alias="lead", content=text)


def at_the_size_limit(word: str, *, near_the_end: str = "") -> str:
    """A post of the word repeated to the size limit, `near_the_end` among its last words."""
    ending = f" {near_the_end} end" if near_the_end else ""
    text = " ".join([word] * ((limits.MESSAGE_BYTES_DEFAULT - len(ending)) // (len(word) + 1))) + ending
    return text + " " * (limits.MESSAGE_BYTES_DEFAULT - len(text.encode()))


def test_a_hundred_hits_at_the_size_limit_answer_within_half_a_second_marking_the_match_at_the_end(agent):
    text = at_the_size_limit("somewhere", near_the_end="Needle")
    assert len(text.encode()) == limits.MESSAGE_BYTES_DEFAULT
    broadcast(agent, text, posts=100)

    results, took = search(agent, "needle", limit=100)

    assert len(results) == 100
    assert {row["snippet"] for row in results} == {"…" + "somewhere " * 8 + "«Needle» end"}
    assert took < 0.5, f"100 hits at the size limit took {took:.2f} s"


def test_the_longest_phrase_a_query_holds_marks_its_match_in_posts_at_the_size_limit(agent):
    """The attack of issue 24: a 249-word phrase over posts of the one word repeated (each place in the
    text a match) took 12-13 s for four posts, comparing every place with the whole phrase in Python."""
    broadcast(agent, at_the_size_limit("a"), posts=4)
    phrase = '"' + " ".join(["a"] * ((QUERY_MAX - 2) // 2)) + '"'

    results, _ = search(agent, phrase, limit=100)

    assert len(results) == 4
    assert results[0]["snippet"] == " ".join(["«a»"] * 32) + "…"
