"""search: one query over tasks, messages and completions, through the tool (as MCP runs it) and
over REST. The fixed corpus test states each query's answer literally: it passes on SQLite (FTS5) and
on PostgreSQL (tsvector + GIN) alike, which is what "the same results on both" means."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from hub_agents.actors import Actor
from hub_agents.models import Network
from hub_agents.services import token_create
from hub_search.models import SearchEntry
from hub_tools.tools import TOOLS_BY_NAME
from tests.helpers import refused
from tests.helpers.calls import report_completion, send_message, send_reply, send_task
from tests.helpers.rest import assert_refused

pytestmark = pytest.mark.django_db


def search(actor: Actor, query: str, **arguments: Any) -> list[dict[str, Any]]:
    answer = TOOLS_BY_NAME["search"].run(actor, {"query": query, **arguments})
    assert answer["ok"] is True
    return answer["results"]


def api_get(client: Client, network: Network, **query: Any):
    _, raw = token_create(network=network, role="member", name="search-api")
    return client.get("/api/v1/search", query, headers={"Authorization": f"Bearer {raw}"})


class Corpus:
    """Rows written through the tools, known by a label: label → (kind, id)."""

    def __init__(self, actor: Actor, clock) -> None:
        self.actor, self.clock, self.ids = actor, clock, {}

    def task(self, label: str, alias: str, text: str, context: str | None = None) -> str:
        self.clock.tick(1)
        task_id = send_task(actor=self.actor, alias=alias, task=text, context=context, from_session="lead")["task_id"]
        self.ids[label] = ("task", task_id)
        return task_id

    def message(self, label: str, alias: str, text: str) -> None:
        self.clock.tick(1)
        self.ids[label] = ("message", send_message(actor=self.actor, alias=alias, message=text)["message_id"])

    def completion(self, label: str, alias: str, task: str, result: str) -> None:
        self.clock.tick(1)
        report_completion(actor=self.actor, alias=alias, task=task, result=result)
        newest = SearchEntry.objects.filter(kind="completion").order_by("-created_at", "-id").first()
        self.ids[label] = ("completion", newest.object_id)

    def labels(self, results: list[dict[str, Any]]) -> list[str]:
        by_id = {value: label for label, value in self.ids.items()}
        return [by_id[(row["kind"], row["id"])] for row in results]


@pytest.fixture
def corpus(agent, clock) -> Corpus:
    rows = Corpus(agent, clock)
    rows.task("t1", "coder", "Deploy the staging cluster after the database migration")
    rows.task("t2", "tester", "Run the migration tests on staging")
    rows.task("t3", "coder", "Rotate the deploy keys", context="staging keys and production keys, all keys")
    rows.message("m1", "coder", "The disk is full on build-7")
    rows.message("m2", "tester", "Is the disk full? No, the disk is fine")
    rows.message("m3", "coder", "Meet at the Café Müller at noon")
    rows.completion("c1", "coder", "Migrate the search index", "migrated; a dry run first")
    rows.completion("c2", "tester", "Dry-run the deploy", "deploy dry run passed")
    return rows


# Each query's answer, best first (a shorter text with the words ranks higher; ties: the newest first):
# the same on SQLite and on PostgreSQL.
FIXED = [
    ("staging", ["t2", "t1", "t3"]),
    ("keys", ["t3"]),
    ("deploy", ["c2", "t1", "t3"]),
    ("DEPLOY Staging", ["t1", "t3"]),
    ('"disk is full"', ["m1"]),
    ("disk", ["m2", "m1"]),
    ("disk -fine", ["m1"]),
    ("migrat*", ["c1", "t2", "t1"]),
    ('deploy -"dry run"', ["t1", "t3"]),
    ("dry-run", ["c2", "c1"]),
    ("cafe muller", ["m3"]),
    ("build-7", ["m1"]),
    ("mi* -migrat*", []),
    ("nothing-like-this", []),
]


@pytest.mark.parametrize(("query", "expected"), FIXED, ids=[query for query, _ in FIXED])
def test_a_fixed_corpus_answers_the_same_on_every_database(corpus, agent, query, expected):
    assert corpus.labels(search(agent, query)) == expected


def test_search_finds_across_kinds_and_says_what_each_hit_is(corpus, agent, network):
    results = search(agent, "staging OR disk OR dry")  # OR is a word here, so this finds nothing
    assert results == []
    results = search(agent, "the")
    assert {row["kind"] for row in results} == {"task", "message", "completion"}
    hit = search(agent, '"disk is full"')[0]
    assert hit["kind"] == "message"
    assert hit["network_id"] == network.id
    assert hit["alias"] == "coder"
    assert hit["title"] == "The disk is full on build-7"
    assert hit["created_at"].endswith("Z")
    assert isinstance(hit["rank"], float)


def test_snippets_mark_the_matching_words(corpus, agent):
    (hit,) = search(agent, '"disk is full"')
    assert hit["snippet"] == "The «disk» «is» «full» on build-7"
    (hit,) = search(agent, "migrat* index")
    assert hit["snippet"] == "«Migrate» the search «index» «migrated»; a dry run first"
    (hit,) = search(agent, "cafe")
    assert "«Café»" in hit["snippet"]


def test_a_snippet_of_a_long_text_is_cut_around_the_match_and_never_shows_a_marker_of_the_text(agent):
    filler = " ".join(f"word{n}" for n in range(200))
    send_task(actor=agent, alias="coder", task=f"{filler} the «needle» here {filler}")
    (hit,) = search(agent, "needle")
    assert hit["snippet"].startswith("…") and hit["snippet"].endswith("…")
    assert "the \u2039«needle»\u203a here" in hit["snippet"]
    assert len(hit["snippet"]) < 400


def test_more_matches_rank_first(agent, clock):
    send_task(actor=agent, alias="coder", task="flaky test once")
    clock.tick(1)
    send_task(actor=agent, alias="coder", task="flaky flaky flaky test")
    clock.tick(1)
    send_task(actor=agent, alias="coder", task="a test that is not it")
    results = search(agent, "flaky test")
    assert [row["title"] for row in results] == ["flaky flaky flaky test", "flaky test once"]
    assert results[0]["rank"] > results[1]["rank"]


def test_another_network_never_shows_even_with_the_same_words(corpus, agent, outsider):
    theirs = send_task(actor=outsider, alias="coder", task="Deploy the staging cluster after the database migration")
    mine = search(agent, "staging cluster")
    assert corpus.labels(mine) == ["t1"]
    (only,) = search(outsider, "staging cluster")
    assert only["id"] == theirs["task_id"]
    assert search(outsider, "disk") == []
    (mine_network,) = agent.readable_networks()
    denied = refused(TOOLS_BY_NAME["search"].run, outsider, {"query": "disk", "network_id": mine_network})
    assert denied.status in {403, 404}


def test_filters_kinds_alias_since_and_limit(corpus, agent):
    assert corpus.labels(search(agent, "deploy", kinds="task")) == ["t1", "t3"]
    assert corpus.labels(search(agent, "deploy dry*", kinds="completion,message")) == ["c2"]
    assert corpus.labels(search(agent, "staging", alias="tester")) == ["t2"]
    t3_time = search(agent, "keys")[0]["created_at"]
    assert corpus.labels(search(agent, "staging", since=t3_time)) == ["t3"]
    assert len(search(agent, "the", limit=2)) == 2


def test_a_task_is_found_by_its_result_once_it_has_one(agent):
    task_id = send_task(actor=agent, alias="coder", task="look into the outage")["task_id"]
    assert search(agent, "kernel") == []
    send_reply(actor=agent, alias="lead", text="a kernel panic", in_reply_to=task_id, from_session="coder")
    kinds = {row["kind"] for row in search(agent, "kernel panic")}
    assert "message" in kinds
    report_completion(actor=agent, alias="coder", task=task_id, result="root cause: a kernel panic")
    found = {(row["kind"], row["id"]) for row in search(agent, "kernel panic")}
    assert ("task", task_id) in found
    assert {kind for kind, _ in found} == {"task", "message", "completion"}


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ('"unclosed phrase', "without its closing"),
        ("deploy -", "with nothing after it"),
        ("-deploy", "no word to look for"),
        ("a*", "at least 2 letters"),
        ("!!! ...", "no word to look for"),
    ],
)
def test_bad_syntax_is_refused_naming_query(agent, query, words):
    error = refused(TOOLS_BY_NAME["search"].run, agent, {"query": query})
    assert (error.code, error.extra["field"]) == ("invalid_argument", "query")
    assert words in error.message


def test_a_word_too_long_to_be_indexed_matches_nothing(corpus, agent):
    assert search(agent, "x" * 101) == [] and search(agent, "keys " + "x" * 101) == []


def test_engine_syntax_in_a_query_is_only_words(corpus, agent):
    for query in ["keys NEAR(deploy)", "terms:keys", "keys' OR 1=1 --", "keys)", "keys & !rotate", "^keys {x}"]:
        assert corpus.labels(search(agent, query)) in ([], ["t3"]), query


def test_rest_searches_refuses_unusable_syntax_with_409_and_bad_since_with_400(client, network, corpus):
    response = api_get(client, network, query="migrat*", kinds="task")
    assert response.status_code == 200, response.content
    assert corpus.labels(response.json()["results"]) == ["t2", "t1"]
    assert_refused(api_get(client, network, query='"open'), 409, "invalid_argument", field="query")
    assert_refused(api_get(client, network, query="x", since="yesterday"), 400, "invalid_argument", field="since")
    assert_refused(api_get(client, network, query="x", kinds="tasks"), 400, "invalid_argument", field="kinds")
    assert_refused(api_get(client, network, query="x", limit=101), 400, "invalid_argument", field="limit")
