"""Channel posts in search: found like every other kind (kind post, id channel_id#seq), by whoever
may read them with channel_read (a broadcast channel's by every reader of its network, any other
channel's only as one of its members, named by `alias`; operators on the dashboard see them all);
the `alias` filter finds the posts of the channels an alias is in; a post retention lets go is gone
from search with it (by count: deleted with the post; by age: hidden at once, even from a full page
of answers, deleted by the sweep). Runs on both databases: the ranked answers are literal."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.core.management import call_command

from hub_agents.actors import Actor
from hub_agents.models import Network
from hub_agents.services import token_create
from hub_channels.models import ChannelPost
from hub_search.models import SearchEntry
from hub_tools.tools import TOOLS_BY_NAME
from tests.helpers import refused
from tests.helpers.calls import channel_create, channel_leave, channel_post, channel_read, send_task

pytestmark = pytest.mark.django_db


def search(actor: Actor, query: str, **arguments: Any) -> list[tuple[str, str]]:
    answer = TOOLS_BY_NAME["search"].run(actor, {"query": query, **arguments})
    assert answer["ok"] is True
    return [(row["kind"], row["id"]) for row in answer["results"]]


def channel(actor: Actor, name: str, owner: str, members: list[str], **config: Any) -> str:
    return channel_create(actor=actor, name=name, alias=owner, members=members, **config)["channel_id"]


def post(actor: Actor, channel_id: str, alias: str, content: str, clock=None) -> tuple[str, str]:
    if clock is not None:
        clock.tick(1)
    seq = channel_post(actor=actor, channel_id=channel_id, alias=alias, content=content)["seq"]
    return ("post", f"{channel_id}#{seq}")


def test_posts_are_found_ranked_with_the_other_kinds_and_say_where_they_are(agent, clock):
    ops = channel(agent, "ops", "lead", ["coder"])
    first = post(agent, ops, "coder", "The staging deploy is blocked on the disk", clock)
    second = post(agent, ops, "lead", "Disk cleaned; staging deploy unblocked, deploy again", clock)

    assert search(agent, "staging deploy", alias="coder") == [second, first]
    assert search(agent, "deploy", kinds="post", alias="lead") == [second, first]
    assert search(agent, "deploy", kinds="task", alias="lead") == []

    (hit,) = TOOLS_BY_NAME["search"].run(agent, {"query": '"disk cleaned"', "alias": "coder"})["results"]
    assert hit["kind"] == "post" and hit["id"] == f"{ops}#2" and hit["alias"] == "lead"
    assert hit["snippet"] == "«Disk» «cleaned»; staging deploy unblocked, deploy again"
    assert hit["title"] == "Disk cleaned; staging deploy unblocked, deploy again"


def test_a_channels_posts_are_found_as_channel_read_shows_them(agent, viewer, clock):
    """Members read a group, direct or pub/sub channel (named by alias); everyone in the network reads
    a broadcast channel; the alias filter finds what it sent and the posts of its channels."""
    ops = channel(agent, "ops", "lead", ["coder"])
    qa = channel(agent, "qa", "tester", [])
    news = channel_create(actor=agent, name="news", alias="lead", type="pubsub")["channel_id"]
    notes = channel_create(actor=agent, name="notes", alias="lead", type="broadcast")["channel_id"]
    in_ops = post(agent, ops, "lead", "rollout plan for friday", clock)
    in_qa = post(agent, qa, "tester", "rollout checklist", clock)
    published = post(agent, news, "coder", "rollout announced", clock)  # coder publishes, not subscribed
    announced = post(agent, notes, "lead", "rollout is on", clock)

    assert search(agent, "rollout") == [announced]  # nobody named: only what every reader reads
    assert search(viewer, "rollout") == [announced]
    assert search(agent, "rollout", alias="coder") == [in_ops]  # not news: coder is no subscriber
    assert search(agent, "rollout", alias="tester") == [in_qa]
    found_by_lead = search(agent, "rollout", alias="lead")  # news' owner is its subscriber
    assert sorted(found_by_lead) == sorted([announced, published, in_ops])
    assert search(agent, "rollout", alias="nobody") == []
    assert channel_read(actor=agent, channel_id=ops, alias="lead")["posts"]  # the rule search follows
    assert refused(channel_read, actor=agent, channel_id=ops).code == "not_a_member"


def test_a_leaver_no_longer_finds_the_channels_posts_even_its_own(agent, clock):
    ops = channel(agent, "ops", "lead", ["coder"])
    mine = post(agent, ops, "coder", "handover notes", clock)
    assert search(agent, "handover", alias="coder") == [mine]

    channel_leave(actor=agent, channel_id=ops, alias="coder")

    assert search(agent, "handover", alias="coder") == []
    assert search(agent, "handover", alias="lead") == [mine]


def api_search(client, network: Network, *, role: str = "member", **query: Any) -> list[str]:
    _, raw = token_create(network=network, role=role, name="search-api")
    answer = client.get("/api/v1/search", query, headers={"Authorization": f"Bearer {raw}"})
    assert answer.status_code == 200, answer.content
    return [row["id"] for row in answer.json()["results"]]


def test_another_network_never_finds_a_post(agent, outsider, network, other_network, client):
    ops = channel(agent, "ops", "lead", ["coder"])
    post(agent, ops, "coder", "secret launch codes")

    assert search(outsider, "launch codes", alias="coder") == []
    assert api_search(client, other_network, query="launch codes", alias="coder") == []
    assert api_search(client, network, query="launch codes", kinds="post", alias="coder") == [f"{ops}#1"]
    assert api_search(client, network, query="launch codes", kinds="post") == []  # nobody named: not a member
    # A viewer naming a member borrows nothing (hub_agents.identity), and without a name finds nothing.
    _, raw = token_create(network=network, role="viewer", name="watcher")
    named = client.get(
        "/api/v1/search", {"query": "launch codes", "alias": "coder"}, headers={"Authorization": f"Bearer {raw}"}
    )
    assert (named.status_code, named.json()["error"]) == (403, "alias_not_yours")
    assert api_search(client, network, role="viewer", query="launch codes", kinds="post") == []


def test_retention_by_count_takes_the_posts_entries_with_them(agent, clock):
    ops = channel(agent, "ops", "lead", ["coder"], retention_max_posts=2)
    for number in range(1, 5):
        post(agent, ops, "coder", f"heartbeat report {number}", clock)

    assert search(agent, "heartbeat report", alias="lead") == [("post", f"{ops}#4"), ("post", f"{ops}#3")]
    assert sorted(SearchEntry.objects.filter(kind="post").values_list("object_id", flat=True)) == [
        f"{ops}#3",
        f"{ops}#4",
    ]


def test_retention_by_age_hides_a_post_at_once_and_the_sweep_deletes_it(agent, clock, caplog):
    ops = channel(agent, "ops", "lead", ["coder"], retention_seconds=60)
    old = post(agent, ops, "coder", "nightly build green")
    clock.tick(30)
    new = post(agent, ops, "coder", "nightly build red")
    assert search(agent, "nightly build", alias="coder") == [new, old]

    clock.tick(31)  # the first post is past 60 s; nobody has posted since
    assert search(agent, "nightly build", alias="coder") == [new]
    assert SearchEntry.objects.filter(kind="post").count() == 2

    with caplog.at_level(logging.INFO, logger="hub_tools.management.commands.sweep"):
        call_command("sweep", "--once")
    assert "deleted 1 aged posts" in caplog.text
    assert list(ChannelPost.objects.values_list("content", flat=True)) == ["nightly build red"]
    assert list(SearchEntry.objects.filter(kind="post").values_list("object_id", flat=True)) == [new[1]]
    assert search(agent, "nightly build", alias="coder") == [new]


def test_aged_posts_never_leave_a_page_short_while_older_matches_exist(agent, clock):
    task_id = send_task(actor=agent, alias="lead", task="release notes draft", from_session="pm")["task_id"]
    ops = channel(agent, "ops", "lead", ["coder"], retention_seconds=60)
    clock.tick(1)
    aged = post(agent, ops, "coder", "release notes reviewed")
    clock.tick(61)  # newer than the task, but past its channel's age limit

    assert search(agent, "release notes", alias="lead", limit=1) == [("task", task_id)]
    assert aged not in search(agent, "release notes", alias="lead")
