"""The channels page (Django's test client, issue 18): the network's channels listed, one created
with the form (owned by the operator's dashboard sender), a channel's posts read oldest first and
posted to (joining a group channel first), live fragments, viewers without forms and refused when
they forge one, and another network's channel not found."""

from __future__ import annotations

import re

import pytest

from hub_agents.services import membership_set
from hub_channels.models import Channel, ChannelMember, ChannelPost
from hub_dashboard import channels as channels_page
from tests.helpers.calls import channel_create, channel_post
from tests.helpers.dashboard import text


def rows() -> tuple[int, int, int]:
    return Channel.objects.count(), ChannelMember.objects.count(), ChannelPost.objects.count()


def group(actor, name: str = "backend", **fields) -> str:
    fields.setdefault("members", ["coder"])
    return channel_create(actor=actor, name=name, alias="lead", **fields)["channel_id"]


def posted(page: str) -> list[str]:
    """The posts' text, in the order the page shows them."""
    return re.findall(r'<pre class="text">(.*?)</pre>', page, re.S)


def test_the_list_shows_each_channel_with_its_type_members_and_last_post(login, agent):
    quiet = group(agent, "quiet", members=["coder", "reviewer"])
    busy = group(agent, "busy", type="broadcast", members=[])
    channel_post(actor=agent, channel_id=busy, alias="lead", content="release at 5")

    page = text(login().get("/channels/"))

    listed = re.findall(r'<li data-key="(chn_\w+)"', page)
    assert listed == [busy, quiet]  # by name
    quiet_row = page.split(f'data-key="{quiet}"')[1].split("</li>")[0]
    busy_row = page.split(f'data-key="{busy}"')[1].split("</li>")[0]
    assert "t-group" in quiet_row and ">3 members</span>" in quiet_row and 'last post <span class="when">—' in quiet_row
    assert "t-broadcast" in busy_row and ">1 member</span>" in busy_row and "just now</time>" in busy_row
    assert 'href="/channels/"' in page and 'class="active">Channels</a>' in page  # the nav's link


def test_the_form_creates_a_channel_the_operator_owns(login, network):
    browser = login("member", username="ada")

    reply = browser.post(
        "/channels/", {"name": "ops", "type": "pubsub", "members": "coder, reviewer", "description": "alerts"}
    )

    channel = Channel.objects.get(network=network, name="ops")
    assert reply.status_code == 302 and reply["Location"] == f"/channels/{channel.pk}/"
    assert (channel.type, channel.description, channel.created_by) == ("pubsub", "alerts", "dashboard:ada")
    members = dict(ChannelMember.objects.filter(channel=channel).values_list("alias", "role"))
    assert members == {"dashboard:ada": "owner", "coder": "subscriber", "reviewer": "subscriber"}
    page = text(browser.get(reply["Location"]))
    assert "Channel #ops created; you own it as dashboard:ada." in page
    assert "dashboard:ada · owner" in page and ">Publish</button>" in page  # pub/sub: no join needed


def test_a_direct_channel_takes_the_one_other_agent_and_bad_forms_say_what_to_fix(login, network):
    browser = login()

    direct = browser.post("/channels/", {"name": "pair", "type": "direct", "members": "coder"})
    crowded = browser.post("/channels/", {"name": "trio", "type": "direct", "members": "coder reviewer"})
    badly_named = browser.post("/channels/", {"name": "no spaces", "type": "group", "members": ""})
    taken = browser.post("/channels/", {"name": "pair", "type": "group", "members": ""})

    assert direct.status_code == 302
    pair = Channel.objects.get(name="pair")
    assert (pair.type, pair.max_members) == ("direct", 2)
    assert crowded.status_code == 400 and "exactly one alias besides yours" in text(crowded)
    assert badly_named.status_code == 400 and "letters, digits, hyphens or underscores" in text(badly_named)
    assert 'name="name" value="no spaces"' in text(badly_named)  # what was typed stays
    assert taken.status_code == 400 and "has a channel of that name already" in text(taken)
    assert 'aria-describedby="error-name"' in text(taken)
    assert list(Channel.objects.values_list("name", flat=True)) == ["pair"]


def test_posting_to_an_agents_group_channel_joins_it_first_and_the_posts_read_in_order(login, agent):
    channel_id = group(agent)
    channel_post(actor=agent, channel_id=channel_id, alias="coder", content="schema ready")
    browser = login("member", username="ada")
    page = text(browser.get(f"/channels/{channel_id}/"))
    assert "Join as dashboard:ada and post" in page and 'name="join" value="1"' in page

    reply = browser.post(f"/channels/{channel_id}/", {"content": "ship it", "join": "1"}, follow=True)

    assert reply.redirect_chain == [(f"/channels/{channel_id}/#post", 302)]
    assert "Posted as dashboard:ada (#2)." in text(reply)
    assert ChannelMember.objects.get(channel_id=channel_id, alias="dashboard:ada").role == "member"
    channel_post(actor=agent, channel_id=channel_id, alias="lead", content="thanks")
    page = text(browser.get(f"/channels/{channel_id}/"))
    assert posted(page) == ["schema ready", "ship it", "thanks"]
    assert '<li class="post mine" data-key="p2" id="post-2">' in page
    assert ">Post</button>" in page and 'name="join"' not in page  # a member now
    again = browser.post(f"/channels/{channel_id}/", {"content": "and again"})
    assert again.status_code == 302 and ChannelPost.objects.filter(channel_id=channel_id).count() == 4


def test_an_empty_post_joins_nobody_and_a_refused_post_keeps_its_text(login, agent):
    channel_id = group(agent, max_message_bytes=10)
    browser = login()

    empty = browser.post(f"/channels/{channel_id}/", {"content": "  ", "join": "1"})
    assert empty.status_code == 400 and "Content is required." in text(empty)
    assert not ChannelMember.objects.filter(alias="dashboard:operator").exists()

    long = browser.post(f"/channels/{channel_id}/", {"content": "twelve bytes", "join": "1"})

    assert long.status_code == 400 and "takes at most 10" in text(long)
    assert ">twelve bytes</textarea>" in text(long)
    assert not ChannelPost.objects.exists()
    # The join went through before the post was refused: the page says so by offering plain Post.
    assert ">Post</button>" in text(long)


def test_who_posts_follows_the_channel_type(login, agent):
    announcements = group(agent, "announcements", type="broadcast", members=[])
    pair = group(agent, "pair", type="direct", members=["coder"])
    browser = login()

    broadcast = text(browser.get(f"/channels/{announcements}/"))
    direct = text(browser.get(f"/channels/{pair}/"))
    forged = browser.post(f"/channels/{announcements}/", {"content": "not an owner"})

    assert "Only a broadcast channel&#x27;s owners post in it (lead)." in broadcast and "<textarea" not in broadcast
    assert "A direct channel: only its two members post in it." in direct and "<textarea" not in direct
    assert forged.status_code == 400 and not ChannelPost.objects.exists()


def test_the_latest_posts_are_shown_and_the_earlier_ones_counted(login, agent, monkeypatch):
    monkeypatch.setattr(channels_page, "POSTS_SHOWN", 3)
    channel_id = group(agent)
    for n in range(1, 6):
        channel_post(actor=agent, channel_id=channel_id, alias="coder", content=f"post {n}")

    page = text(login().get(f"/channels/{channel_id}/"))

    assert posted(page) == ["post 3", "post 4", "post 5"]
    assert "2 earlier posts kept; the latest 3 shown." in page


def test_what_agents_wrote_is_escaped(login, agent):
    channel_id = group(agent, description="<img src=x onerror=alert(1)>")
    channel_post(actor=agent, channel_id=channel_id, alias="coder", content="<script>alert('x')</script>")
    browser = login()

    page = text(browser.get(f"/channels/{channel_id}/"))
    fragment = text(browser.get(f"/channels/{channel_id}/?fragment=channel_posts"))

    for shown in (page, fragment):
        assert "<script>alert" not in shown
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in fragment
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_the_fragments_render_the_posts_and_the_list_alone(login, agent):
    channel_id = group(agent)
    channel_post(actor=agent, channel_id=channel_id, alias="coder", content="first")
    browser = login()
    assert 'data-live="channel_posts"' in text(browser.get(f"/channels/{channel_id}/"))
    channel_post(actor=agent, channel_id=channel_id, alias="lead", content="second")

    posts = text(browser.get(f"/channels/{channel_id}/?fragment=channel_posts"))
    listed = text(browser.get(f"/channels/{channel_id}/?fragment=channels"))

    assert posted(posts) == ["first", "second"] and "<html" not in posts and "<textarea" not in posts
    assert f'data-key="{channel_id}" data-version="2-2" class="chosen"' in listed and "<html" not in listed


def test_a_viewer_reads_without_forms_and_a_forged_form_writes_nothing(login, agent, network):
    channel_id = group(agent)
    channel_post(actor=agent, channel_id=channel_id, alias="coder", content="for members")
    viewer = login("viewer", username="watcher")

    index = text(viewer.get("/channels/"))
    page = text(viewer.get(f"/channels/{channel_id}/"))
    assert "backend" in index and '<form method="post" class="form create-channel"' not in index
    assert "for members" in page and "<textarea" not in page and "Join as" not in page
    before = rows()

    created = viewer.post("/channels/", {"name": "mine", "type": "group"})
    joined_and_posted = viewer.post(f"/channels/{channel_id}/", {"content": "from a viewer", "join": "1"})
    post_only = viewer.post(f"/channels/{channel_id}/", {"content": "from a viewer"})

    refusal = f"Your role in network {network.pk} is viewer: it may read but not write."
    for reply in (created, joined_and_posted, post_only):
        assert reply.status_code == 400 and refusal in text(reply)
    assert rows() == before


def test_another_networks_channel_is_not_found_and_untouched(login, outsider, other_network):
    theirs = channel_create(actor=outsider, name="secret", alias="spy", members=["mole"])["channel_id"]
    channel_post(actor=outsider, channel_id=theirs, alias="spy", content="their plans")
    browser = login()
    before = rows()

    page = browser.get(f"/channels/{theirs}/")
    fragment = browser.get(f"/channels/{theirs}/?fragment=channel_posts")
    forged = browser.post(f"/channels/{theirs}/", {"content": "intrusion", "join": "1"})
    left = browser.post(f"/channels/{theirs}/leave/", follow=True)
    index = text(browser.get(f"/channels/?network={other_network.pk}"))

    for reply in (page, fragment, forged):
        assert reply.status_code == 404 and "No channel with this id" in text(reply)
        assert "their plans" not in text(reply) and "secret" not in text(reply)
    assert left.status_code == 404 and "No channel with this id" in text(left)
    assert "secret" not in index and theirs not in index
    assert rows() == before


def test_leaving_takes_the_dashboard_sender_out(login, agent):
    channel_id = group(agent)
    browser = login("member", username="ada")
    browser.post(f"/channels/{channel_id}/", {"content": "hello", "join": "1"})
    assert "Leave as dashboard:ada" in text(browser.get(f"/channels/{channel_id}/"))

    reply = browser.post(f"/channels/{channel_id}/leave/", follow=True)

    assert "dashboard:ada left the channel." in text(reply) and "Join as dashboard:ada and post" in text(reply)
    assert not ChannelMember.objects.filter(alias="dashboard:ada").exists()


@pytest.mark.parametrize("role", ["owner", "viewer"])
def test_operators_read_a_private_channel_even_once_everyone_left(login, agent, role):
    """Members read a group channel over MCP; operators watch every channel of their network, as they
    watch every inbox, with nobody left to read as."""
    channel_id = group(agent, members=["coder"])
    channel_post(actor=agent, channel_id=channel_id, alias="coder", content="handing over")
    for alias in ("coder", "lead"):
        ChannelMember.objects.filter(channel_id=channel_id, alias=alias).delete()

    page = text(login(role).get(f"/channels/{channel_id}/"))

    assert posted(page) == ["handing over"]


@pytest.mark.parametrize("role", ["owner", "viewer"])
def test_a_channel_of_another_of_the_operators_networks_switches_to_it(
    login, make_actor, other_network, django_user_model, role
):
    browser = login()
    membership_set(user=django_user_model.objects.get(username="operator"), network=other_network, role=role)
    theirs = channel_create(actor=make_actor(other_network, "member"), name="beta-room", alias="lead")["channel_id"]

    reply = browser.get(f"/channels/{theirs}/", follow=True)

    assert reply.redirect_chain == [(f"/channels/{theirs}/?network={other_network.pk}", 302)]
    assert f'data-network="{other_network.pk}"' in text(reply) and "#beta-room" in text(reply)
    assert ("<textarea" in text(reply)) is (role == "owner")
