"""Channels through the tools (issue 18): types, members and roles, who reads and who posts, limits,
configuration, and the channel_post events that reach the members. Cursor reads, retention and
racing posters: test_cursor_and_retention.py; REST: test_channels_api.py; SSE: tests/hub_live/test_channels_live.py.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from hub_agents.models import AuditEntry
from hub_channels.models import ChannelMember, ChannelPost
from hub_core.events import EVENT_SCHEMA, EventType
from hub_events.models import OPERATORS, Event
from tests.helpers import NOW, refused
from tests.helpers.calls import (
    channel_configure,
    channel_create,
    channel_info,
    channel_join,
    channel_leave,
    channel_list,
    channel_post,
    channel_read,
)

pytestmark = pytest.mark.django_db


def group(actor, name="backend", owner="lead", members=("coder",), **config) -> str:
    return channel_create(actor=actor, name=name, alias=owner, members=list(members), **config)["channel_id"]


def contents(actor, channel_id: str, alias: str, **query) -> list[str]:
    return [post["content"] for post in channel_read(actor=actor, channel_id=channel_id, alias=alias, **query)["posts"]]


def test_a_group_channel_takes_members_and_their_posts_in_order(agent):
    created = channel_create(actor=agent, name="backend", alias="lead", members=["coder"], description="API work")
    channel_id = created["channel_id"]
    assert channel_id.startswith("chn_") and created["type"] == "group"
    assert [(m["alias"], m["role"]) for m in created["members"]] == [("lead", "owner"), ("coder", "member")]

    joined = channel_join(actor=agent, channel_id=channel_id, alias="reviewer")
    first = channel_post(actor=agent, channel_id=channel_id, alias="coder", content="schema is ready")
    second = channel_post(actor=agent, channel_id=channel_id, alias="reviewer", content="looking", kind="response")

    assert (joined["role"], joined["members"]) == ("member", 3)
    assert (first["seq"], second["seq"]) == (1, 2)
    assert (first["delivered_to"], second["delivered_to"]) == (2, 2)  # the other two members each time
    read = channel_read(actor=agent, channel_id=channel_id, alias="lead")
    assert [(p["seq"], p["sender"], p["content"], p["kind"]) for p in read["posts"]] == [
        (1, "coder", "schema is ready", "text"),
        (2, "reviewer", "looking", "response"),
    ]
    assert (read["next_after"], read["last_seq"], read["first_seq"]) == (2, 2, 1)
    info = channel_info(actor=agent, channel_id=channel_id)
    assert (info["member_count"], info["post_count"], info["last_seq"], info["description"]) == (3, 2, 2, "API work")
    (listed,) = channel_list(actor=agent, alias="reviewer")["channels"]
    assert (listed["channel_id"], listed["member_count"], listed["last_seq"]) == (channel_id, 3, 2)
    assert listed["last_post_at"] == read["posts"][-1]["created_at"]
    assert channel_list(actor=agent, alias="stranger")["channels"] == []


def test_a_non_member_neither_reads_nor_posts_and_a_leaver_stops_reading(agent):
    channel_id = group(agent)
    channel_post(actor=agent, channel_id=channel_id, alias="coder", content="members only")

    assert refused(channel_read, actor=agent, channel_id=channel_id, alias="stranger").code == "not_a_member"
    assert refused(channel_read, actor=agent, channel_id=channel_id).code == "not_a_member"  # no alias: nobody's
    refusal = refused(channel_post, actor=agent, channel_id=channel_id, alias="stranger", content="let me in")
    assert (refusal.code, refusal.status) == ("not_a_member", 403)
    channel_leave(actor=agent, channel_id=channel_id, alias="coder")
    assert refused(channel_read, actor=agent, channel_id=channel_id, alias="coder").code == "not_a_member"
    again = refused(channel_leave, actor=agent, channel_id=channel_id, alias="coder")
    assert (again.code, again.status) == ("not_a_member", 409)  # nothing to leave
    assert list(ChannelPost.objects.values_list("content", flat=True)) == ["members only"]


def test_another_network_sees_nothing_of_a_channel_and_touches_nothing(agent, outsider, network):
    channel_id = group(agent)
    channel_post(actor=agent, channel_id=channel_id, alias="coder", content="alpha only")

    assert channel_list(actor=outsider)["channels"] == []
    for call, arguments in [
        (channel_info, {}),
        (channel_read, {"alias": "coder"}),
        (channel_join, {"alias": "coder"}),
        (channel_leave, {"alias": "coder"}),
        (channel_post, {"alias": "coder", "content": "intrusion"}),
        (channel_configure, {"alias": "lead", "retention_max_posts": 1}),
    ]:
        refusal = refused(call, actor=outsider, channel_id=channel_id, **arguments)
        assert (refusal.code, refusal.status) == ("channel_not_found", 404), call.__name__
        assert "alpha only" not in refusal.message
    assert refused(channel_list, actor=outsider, network_id=network.id).code == "permission_denied"
    assert contents(agent, channel_id, "lead") == ["alpha only"]
    assert ChannelMember.objects.count() == 2


def test_a_viewer_borrows_no_members_channel_and_writes_nothing(agent, viewer):
    channel_id = group(agent)
    channel_post(actor=agent, channel_id=channel_id, alias="coder", content="hello")

    # Naming a member lends a viewer nothing (hub_agents.identity); the member itself reads.
    assert refused(channel_read, actor=viewer, channel_id=channel_id, alias="lead").code == "alias_not_yours"
    assert refused(channel_read, actor=viewer, channel_id=channel_id).code == "not_a_member"
    assert contents(agent, channel_id, "lead") == ["hello"]
    for call, arguments in [
        (channel_post, {"alias": "lead", "content": "from a viewer"}),
        (channel_join, {"alias": "viewer-alias"}),
        (channel_leave, {"alias": "coder"}),
        (channel_configure, {"alias": "lead", "description": "mine now"}),
    ]:
        assert refused(call, actor=viewer, channel_id=channel_id, **arguments).code == "permission_denied"
    assert refused(channel_create, actor=viewer, name="viewers", alias="lead").code == "permission_denied"
    assert (ChannelPost.objects.count(), ChannelMember.objects.count()) == (1, 2)


def test_a_name_is_taken_once_per_network_and_must_be_a_plain_name(agent, outsider):
    channel_id = group(agent, name="ops")

    taken = refused(channel_create, actor=agent, name="ops", alias="other")
    assert (taken.code, taken.status, taken.extra["channel_id"]) == ("channel_exists", 409, channel_id)
    assert channel_create(actor=outsider, name="ops", alias="b-lead")["channel_id"] != channel_id
    for bad in ("has space", "x" * 129, "dots.not.allowed", "ünïcode"):
        refusal = refused(channel_create, actor=agent, name=bad, alias="lead")
        assert (refusal.code, refusal.extra["field"]) == ("invalid_argument", "name"), bad
    (found,) = channel_list(actor=agent, name="ops")["channels"]
    assert found["channel_id"] == channel_id


def test_a_direct_channel_has_exactly_its_two_members(agent):
    for members, field in [([], "members"), (["a", "b"], "members"), (["lead"], "members")]:
        refusal = refused(channel_create, actor=agent, name="dm", alias="lead", type="direct", members=members)
        assert (refusal.code, refusal.extra["field"]) == ("invalid_argument", field), members
    refusal = refused(
        channel_create, actor=agent, name="dm", alias="lead", type="direct", members=["coder"], max_members=3
    )
    assert refusal.extra["field"] == "max_members"

    dm = channel_create(actor=agent, name="dm", alias="lead", type="direct", members=["coder"])

    assert (dm["member_count"], dm["config"]["max_members"]) == (2, 2)
    for call in (channel_join, channel_leave):
        alias = "third" if call is channel_join else "coder"
        refusal = refused(call, actor=agent, channel_id=dm["channel_id"], alias=alias)
        assert (refusal.code, refusal.status) == ("direct_channel", 409)
    assert refused(channel_configure, actor=agent, channel_id=dm["channel_id"], alias="lead", max_members=5).code == (
        "direct_channel"
    )
    assert channel_post(actor=agent, channel_id=dm["channel_id"], alias="coder", content="hi")["delivered_to"] == 1
    assert contents(agent, dm["channel_id"], "lead") == ["hi"]
    assert refused(channel_read, actor=agent, channel_id=dm["channel_id"], alias="third").code == "not_a_member"


def test_a_full_channel_refuses_a_join_and_a_member_joins_once(agent):
    channel_id = group(agent, max_members=2)

    full = refused(channel_join, actor=agent, channel_id=channel_id, alias="third")
    again = refused(channel_join, actor=agent, channel_id=channel_id, alias="coder")

    assert (full.code, full.status, again.code, again.status) == ("channel_full", 409, "already_member", 409)
    channel_leave(actor=agent, channel_id=channel_id, alias="coder")
    assert channel_join(actor=agent, channel_id=channel_id, alias="third")["members"] == 2
    channel_configure(actor=agent, channel_id=channel_id, alias="lead", max_members=0)  # 0 lifts the limit
    assert channel_join(actor=agent, channel_id=channel_id, alias="fourth")["members"] == 3
    crowded = refused(channel_create, actor=agent, name="tiny", alias="lead", members=["a", "b"], max_members=2)
    assert (crowded.code, crowded.extra["field"]) == ("invalid_argument", "members")


def test_a_broadcast_channel_takes_posts_from_its_owners_only_and_anyone_reads_it(agent):
    channel_id = group(agent, name="announcements", type="broadcast")

    refusal = refused(channel_post, actor=agent, channel_id=channel_id, alias="coder", content="me too")
    posted = channel_post(actor=agent, channel_id=channel_id, alias="lead", content="deploy at 5")

    assert (refusal.code, refusal.status) == ("permission_denied", 403)
    assert posted["delivered_to"] == 1
    assert contents(agent, channel_id, "not-a-member") == ["deploy at 5"]
    read = channel_read(actor=agent, channel_id=channel_id)  # no alias: a broadcast channel is public
    assert [post["content"] for post in read["posts"]] == ["deploy at 5"]


def test_pubsub_subscribers_receive_what_anyone_publishes_but_not_their_own(agent):
    topic = channel_create(actor=agent, name="build-events", alias="ci", type="pubsub")["channel_id"]
    subscribed = [channel_join(actor=agent, channel_id=topic, alias=alias) for alias in ("monitor", "dashboard")]
    assert [row["role"] for row in subscribed] == ["subscriber", "subscriber"]

    published = channel_post(actor=agent, channel_id=topic, alias="builder", content="build 42 green")
    echoed = channel_post(actor=agent, channel_id=topic, alias="monitor", content="noted")

    assert published["delivered_to"] == 3  # ci (its owner), monitor, dashboard; builder is no subscriber
    assert echoed["delivered_to"] == 2  # the publisher is not pushed its own post
    audiences = Event.objects.filter(type="channel_post", payload__seq=2).values_list("audience", flat=True)
    assert sorted(audiences) == sorted([OPERATORS, "ci", "dashboard"])
    assert contents(agent, topic, "dashboard") == ["build 42 green", "noted"]
    assert refused(channel_read, actor=agent, channel_id=topic, alias="builder").code == "not_a_member"
    channel_leave(actor=agent, channel_id=topic, alias="dashboard")  # unsubscribe
    assert channel_post(actor=agent, channel_id=topic, alias="builder", content="build 43")["delivered_to"] == 2


def test_a_post_over_the_channels_byte_limit_is_refused(agent):
    channel_id = group(agent, max_message_bytes=10)

    refusal = refused(channel_post, actor=agent, channel_id=channel_id, alias="coder", content="é" * 6)  # 12 bytes

    assert (refusal.code, refusal.status, refusal.extra["max_message_bytes"]) == ("message_too_large", 409, 10)
    assert channel_post(actor=agent, channel_id=channel_id, alias="coder", content="é" * 5)["seq"] == 1
    channel_configure(actor=agent, channel_id=channel_id, alias="lead", max_message_bytes=12)
    assert channel_post(actor=agent, channel_id=channel_id, alias="coder", content="é" * 6)["seq"] == 2
    assert group(agent, name="roomy")  # the default limit takes a long post
    default = channel_info(actor=agent, channel_id=channel_list(actor=agent, name="roomy")["channels"][0]["channel_id"])
    assert default["config"]["max_message_bytes"] == 65_536
    too_high = refused(channel_configure, actor=agent, channel_id=channel_id, alias="lead", max_message_bytes=2**20 + 1)
    assert too_high.extra["field"] == "max_message_bytes"


@pytest.mark.parametrize("since", ["yesterday", "2026-13-01T00:00:00Z", "12:00", "2026-04-12 25:00"])
def test_since_with_a_bad_timestamp_is_refused_never_ignored(agent, since):
    channel_id = group(agent)
    channel_post(actor=agent, channel_id=channel_id, alias="coder", content="old")

    refusal = refused(channel_read, actor=agent, channel_id=channel_id, alias="lead", since=since)

    assert (refusal.code, refusal.status, refusal.extra["field"]) == ("invalid_argument", 400, "since")


def test_since_reads_what_was_posted_after_a_time(agent, clock):
    channel_id = group(agent)
    channel_post(actor=agent, channel_id=channel_id, alias="coder", content="at ten")
    clock.tick(10)
    channel_post(actor=agent, channel_id=channel_id, alias="coder", content="ten seconds later")

    def since(moment):
        return contents(agent, channel_id, "lead", since=moment.isoformat().replace("+00:00", "Z"))

    assert since(NOW - timedelta(seconds=1)) == ["at ten", "ten seconds later"]
    assert since(NOW) == ["ten seconds later"]  # strictly after
    assert since(NOW + timedelta(seconds=10)) == []
    assert contents(agent, channel_id, "lead", since="2026-04-12T10:00:05+00:00", after=0) == ["ten seconds later"]


def test_only_owners_and_network_admins_configure_a_channel(agent, make_actor, network):
    channel_id = group(agent)

    for alias in (None, "coder", "stranger"):
        arguments = {} if alias is None else {"alias": alias}
        refusal = refused(channel_configure, actor=agent, channel_id=channel_id, description="mine", **arguments)
        assert (refusal.code, refusal.status) == ("permission_denied", 403), alias
        assert "lead" in refusal.message  # who may: the owners, by alias

    by_owner = channel_configure(actor=agent, channel_id=channel_id, alias="lead", description="API work")
    by_admin = channel_configure(actor=make_actor(network, "admin"), channel_id=channel_id, retention_seconds=3600)

    assert by_owner["description"] == "API work"
    assert by_admin["config"] == {
        "max_members": None,
        "max_message_bytes": 65_536,
        "retention_max_posts": None,
        "retention_seconds": 3600,
    }
    assert by_admin["description"] == "API work"  # what is left out stays


def test_a_post_pushes_a_channel_post_event_to_every_member_but_its_sender(agent):
    channel_id = group(agent, members=("coder", "reviewer"))
    long_post = "x" * 5_000

    posted = channel_post(actor=agent, channel_id=channel_id, alias="coder", content=long_post, kind="command")

    copies = Event.objects.filter(type=EventType.CHANNEL_POST, payload__channel_id=channel_id)
    assert sorted(copies.values_list("audience", flat=True)) == sorted([OPERATORS, "lead", "reviewer"])
    payload = copies.first().payload
    assert set(payload) == EVENT_SCHEMA[EventType.CHANNEL_POST]
    assert (payload["seq"], payload["sender"], payload["kind"], payload["name"]) == (1, "coder", "command", "backend")
    assert (len(payload["content"]), payload["truncated"]) == (2_000, True)
    assert posted["delivered_to"] == 2
    assert contents(agent, channel_id, "lead") == [long_post]  # read whole


def test_creating_and_configuring_a_channel_are_audited(agent, network):
    channel_id = group(agent, members=("coder",))
    channel_configure(actor=agent, channel_id=channel_id, alias="lead", retention_max_posts=10)

    created, configured = AuditEntry.objects.filter(network_id=network.pk, action__startswith="channel.").order_by("id")
    assert (created.action, created.actor, created.target) == (
        "channel.created",
        agent.label,
        f"channel backend ({channel_id})",
    )
    assert (created.detail["type"], created.detail["owner"], created.detail["members"]) == ("group", "lead", ["coder"])
    assert (configured.action, configured.actor) == ("channel.configured", f"{agent.label} as lead")
    assert configured.detail["changed"] == {"retention_max_posts": 10}
