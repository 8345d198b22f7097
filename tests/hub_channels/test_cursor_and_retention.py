"""Reading a channel by cursor loses and repeats nothing (1,000 posts in pages; posters racing a
reader on real threads), and retention deletes exactly what falls outside a channel's limits: by
count, by age, both, and at once when an owner tightens them."""

from __future__ import annotations

import pytest

from hub_channels.models import ChannelPost
from tests.helpers.calls import channel_configure, channel_create, channel_info, channel_post, channel_read
from tests.helpers.races import race

pytestmark = pytest.mark.usefixtures("unlimited")


def group(actor, members=("coder",), **config) -> str:
    return channel_create(actor=actor, name="firehose", alias="lead", members=list(members), **config)["channel_id"]


def page_through(actor, channel_id: str, *, limit: int, after: int = 0) -> tuple[list[dict], list[list[int]]]:
    """Every post after `after`, page by page with after = next_after; and each page's positions."""
    posts, pages = [], []
    while True:
        read = channel_read(actor=actor, channel_id=channel_id, alias="lead", after=after, limit=limit)
        if not read["posts"]:
            assert read["next_after"] == after
            return posts, pages
        posts += read["posts"]
        pages.append([post["seq"] for post in read["posts"]])
        after = read["next_after"]


@pytest.mark.slow  # a thousand posts: seconds
@pytest.mark.django_db
def test_paging_through_1000_posts_loses_and_repeats_nothing(agent):
    channel_id = group(agent)
    for number in range(1, 1001):
        channel_post(actor=agent, channel_id=channel_id, alias="coder", content=f"post {number}")

    posts, pages = page_through(agent, channel_id, limit=37)

    assert [post["content"] for post in posts] == [f"post {number}" for number in range(1, 1001)]
    assert [post["seq"] for post in posts] == list(range(1, 1001))
    assert len(pages) == 28 and all(len(page) == 37 for page in pages[:-1])
    # A page started in the middle goes on from there.
    later, _ = page_through(agent, channel_id, limit=500, after=990)
    assert [post["seq"] for post in later] == list(range(991, 1001))


@pytest.mark.race
@pytest.mark.django_db(transaction=True)
def test_posters_racing_a_reader_on_real_threads_each_page_continues_where_the_last_ended(agent):
    """Four posters and a reader at once: every page the reader gets starts right after the last one
    (no post numbered later shows up before an earlier one commits), and in the end every post is
    read once, each poster's in its own order."""
    channel_id = group(agent, members=("p0", "p1", "p2", "p3"))
    per_poster = 60

    def poster(alias: str):
        return lambda: [
            channel_post(actor=agent, channel_id=channel_id, alias=alias, content=f"{alias} {n}")["seq"]
            for n in range(per_poster)
        ]

    def reader() -> list[list[int]]:
        pages, after = [], 0
        while after < 4 * per_poster:
            read = channel_read(actor=agent, channel_id=channel_id, alias="lead", after=after, limit=25)
            if read["posts"]:
                pages.append([post["seq"] for post in read["posts"]])
                after = read["next_after"]
        return pages

    *posted, pages = race(*(poster(f"p{i}") for i in range(4)), reader)

    assert sorted(seq for seqs in posted for seq in seqs) == list(range(1, 4 * per_poster + 1))
    expected_start = 1
    for page in pages:
        assert page == list(range(expected_start, expected_start + len(page))), (expected_start, page)
        expected_start += len(page)
    assert expected_start == 4 * per_poster + 1
    everything, _ = page_through(agent, channel_id, limit=500)
    for i, seqs in enumerate(posted):
        mine = [post["content"] for post in everything if post["sender"] == f"p{i}"]
        assert mine == [f"p{i} {n}" for n in range(per_poster)]
        assert seqs == sorted(seqs)


@pytest.mark.django_db
def test_retention_by_count_keeps_exactly_the_newest_posts(agent):
    channel_id = group(agent, retention_max_posts=5)

    removed = [
        channel_post(actor=agent, channel_id=channel_id, alias="coder", content=f"post {n}")["removed"]
        for n in range(1, 13)
    ]

    assert removed == [0] * 5 + [1] * 7
    assert list(ChannelPost.objects.order_by("seq").values_list("seq", flat=True)) == [8, 9, 10, 11, 12]
    read = channel_read(actor=agent, channel_id=channel_id, alias="lead", after=2)
    assert ([post["seq"] for post in read["posts"]], read["first_seq"], read["last_seq"]) == ([8, 9, 10, 11, 12], 8, 12)
    info = channel_info(actor=agent, channel_id=channel_id)
    assert (info["post_count"], info["first_seq"], info["last_seq"]) == (5, 8, 12)


@pytest.mark.django_db
def test_retention_by_age_deletes_what_is_older_and_hides_it_until_then(agent, clock):
    channel_id = group(agent, retention_seconds=60)
    channel_post(actor=agent, channel_id=channel_id, alias="coder", content="at 0 s")
    clock.tick(30)
    channel_post(actor=agent, channel_id=channel_id, alias="coder", content="at 30 s")
    clock.tick(30)  # the first is exactly 60 s old: no longer younger than 60 s

    third = channel_post(actor=agent, channel_id=channel_id, alias="coder", content="at 60 s")

    assert third["removed"] == 1
    assert list(ChannelPost.objects.order_by("seq").values_list("content", flat=True)) == ["at 30 s", "at 60 s"]
    clock.tick(45)  # "at 30 s" is 75 s old: past the limit, though no write has deleted it yet
    assert [p["content"] for p in channel_read(actor=agent, channel_id=channel_id, alias="lead")["posts"]] == [
        "at 60 s"
    ]
    assert ChannelPost.objects.count() == 2
    assert channel_info(actor=agent, channel_id=channel_id)["post_count"] == 1
    clock.tick(60)
    assert channel_post(actor=agent, channel_id=channel_id, alias="coder", content="later")["removed"] == 2
    assert list(ChannelPost.objects.values_list("content", flat=True)) == ["later"]


@pytest.mark.django_db
def test_retention_by_count_and_age_together_keeps_what_both_allow(agent, clock):
    channel_id = group(agent, retention_max_posts=3, retention_seconds=100)
    for n in range(1, 5):  # posts 1 to 4 at 0, 10, 20, 30 s: the count drops post 1, young as it is
        channel_post(actor=agent, channel_id=channel_id, alias="coder", content=f"post {n}")
        clock.tick(10)
    assert list(ChannelPost.objects.order_by("seq").values_list("seq", flat=True)) == [2, 3, 4]
    clock.tick(85)

    posted = channel_post(actor=agent, channel_id=channel_id, alias="coder", content="post 5")  # at 125 s

    # The count alone would keep 3, 4, 5; the age drops 3 too (at 20 s: 105 s old), keeps 4 (95 s).
    assert posted["removed"] == 2
    assert list(ChannelPost.objects.order_by("seq").values_list("seq", flat=True)) == [4, 5]


@pytest.mark.django_db
def test_an_owner_tightening_retention_deletes_the_excess_at_once(agent):
    channel_id = group(agent)
    for n in range(10):
        channel_post(actor=agent, channel_id=channel_id, alias="coder", content=f"post {n}")

    tightened = channel_configure(actor=agent, channel_id=channel_id, alias="lead", retention_max_posts=3)

    assert (tightened["removed"], tightened["post_count"], tightened["first_seq"]) == (7, 3, 8)
    assert list(ChannelPost.objects.order_by("seq").values_list("seq", flat=True)) == [8, 9, 10]
    lifted = channel_configure(actor=agent, channel_id=channel_id, alias="lead", retention_max_posts=0)
    assert (lifted["removed"], lifted["config"]["retention_max_posts"]) == (0, None)
    for n in range(5):
        channel_post(actor=agent, channel_id=channel_id, alias="coder", content=f"again {n}")
    assert ChannelPost.objects.count() == 8
