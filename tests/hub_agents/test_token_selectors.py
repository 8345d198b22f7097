"""Reading a network's tokens for its owners and admins (hub_agents.selectors): which tokens act there,
what an admin may give or take away, and what a switch to the strict identity policy takes away."""

from __future__ import annotations

import pytest
from freezegun import freeze_time

from hub_agents.models import AgentSession
from hub_agents.selectors import token_list, token_revocable, token_roles_grantable, tokens_losing_access
from hub_agents.services import membership_set, token_authenticate, token_create, token_revoke, user_get_or_create
from hub_core.errors import HubError
from tests.helpers.calls import get_all_status, report_status, send_task


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_members_and_viewers_read_no_tokens(network, make_actor, role):
    actor = make_actor(network, role)
    for read in (token_list, tokens_losing_access, token_roles_grantable):
        with pytest.raises(HubError) as refused:
            read(actor=actor, network_id=network.pk)
        assert refused.value.code == "permission_denied"
    with pytest.raises(HubError):
        token_revocable(actor=actor, network_id=network.pk, token_id=1)


def test_an_owner_gives_every_role_an_admin_every_role_but_owner(network, make_actor):
    assert token_roles_grantable(actor=make_actor(network, "owner"), network_id=network.pk) == [
        "owner", "admin", "member", "viewer",
    ]  # fmt: skip
    assert token_roles_grantable(actor=make_actor(network, "admin"), network_id=network.pk) == [
        "admin", "member", "viewer",
    ]  # fmt: skip


def test_the_list_holds_the_networks_tokens_and_its_active_members_user_tokens(network, other_network, make_actor):
    owner = make_actor(network, "owner")
    mine, _ = token_create(network=network, name="mine", aliases="a-coder")
    token_create(network=other_network, name="theirs")
    carol, dora, erin = (user_get_or_create(username=name) for name in ("carol", "dora", "erin"))
    membership_set(user=carol, network=network, role="viewer")
    membership_set(user=dora, network=network)
    membership_set(user=erin, network=other_network)  # not a member here
    carols, _ = token_create(user=carol, name="carols")
    doras, _ = token_create(user=dora, name="doras")
    token_create(user=erin, name="erins")
    dora.is_active = False  # a deactivated user's tokens act nowhere
    dora.save()
    gone, _ = token_create(network=network, name="gone")
    token_revoke(token=gone)

    rows = token_list(actor=owner, network_id=network.pk)

    names = [row.name for row in rows]
    assert set(names) == {"mine", "carols", "gone", "owner-token"}
    assert names[-1] == "gone"  # revoked ones last
    by_name = {row.name: row for row in rows}
    assert (by_name["mine"].binding, by_name["carols"].binding) == ("bound to a-coder", "unbound")
    assert (by_name["carols"].role, by_name["carols"].username) == ("viewer", "carol")
    assert by_name["mine"].revocable and not by_name["carols"].revocable and not by_name["gone"].revocable
    assert token_revocable(actor=owner, network_id=network.pk, token_id=mine.pk) == mine
    assert token_revocable(actor=owner, network_id=network.pk, token_id=carols.pk) is None
    assert token_revocable(actor=owner, network_id=network.pk, token_id=doras.pk) is None


def test_losing_access_keeps_the_unbound_tokens_no_agent_reported_through_most_recently_used_first(network, make_actor):
    owner = make_actor(network, "owner")  # itself an unbound owner token, used just now
    made = {
        name: token_create(network=network, name=name, role=role, aliases=aliases)
        for name, role, aliases in [
            ("bound", "member", "a-coder"),
            ("never-used", "member", None),
            ("used-early", "admin", None),
            ("used-late", "member", None),
            ("viewer", "viewer", None),
            ("revoked", "member", None),
        ]
    }
    token_revoke(token=made["revoked"][0])
    with freeze_time("2020-01-01 10:00:00"):
        token_authenticate(raw=made["used-early"][1])
    with freeze_time("2020-01-02 10:00:00"):
        token_authenticate(raw=made["used-late"][1])

    losing = tokens_losing_access(actor=owner, network_id=network.pk)

    assert losing.tokens == []  # no agent has reported
    assert [row.name for row in losing.themselves] == ["owner-token", "used-late", "used-early", "never-used"]


def test_a_token_an_agent_reported_through_is_listed_with_that_agent(network, make_actor):
    owner = make_actor(network, "owner")
    coder_box = make_actor(network, "member")  # unbound: acts as any agent while the network is open
    dispatcher = make_actor(network, "admin")
    token_create(network=network, name="box", aliases="reviewer")
    report_status(actor=coder_box, alias="a-coder", resume_id="r-a-coder", status="idle")
    report_status(actor=coder_box, alias="reviewer", resume_id="r-reviewer", status="idle")
    send_task(actor=dispatcher, alias="a-coder", task="fix the build")  # dispatching acts as no agent
    get_all_status(actor=dispatcher)  # nor does reading the fleet

    losing = tokens_losing_access(actor=owner, network_id=network.pk)

    ((acting,),) = [losing.tokens]
    assert acting.token.id == coder_box.token_id
    assert [(acted.alias, acted.covered) for acted in acting.aliases] == [("a-coder", False), ("reviewer", True)]
    assert acting.last_reported_at == max(acted.last_seen_at for acted in acting.aliases)
    assert {row.id for row in losing.themselves} == {owner.token_id, dispatcher.token_id}
    assert losing.agents == ["a-coder"]


def test_an_alias_is_listed_under_the_token_its_last_report_came_through(network, make_actor):
    owner = make_actor(network, "owner")
    old_box, new_box = make_actor(network, "member"), make_actor(network, "member")
    with freeze_time("2020-01-01 10:00:00"):
        report_status(actor=old_box, alias="a-coder", resume_id="r-1", status="idle")
        report_status(actor=old_box, alias="reviewer", resume_id="r-2", status="idle")
    with freeze_time("2020-01-02 10:00:00"):
        report_status(actor=new_box, alias="a-coder", resume_id="r-3", status="idle")  # restarted elsewhere

    losing = tokens_losing_access(actor=owner, network_id=network.pk)

    acted = [(acting.token.id, [one.alias for one in acting.aliases]) for acting in losing.tokens]
    assert acted == [(new_box.token_id, ["a-coder"]), (old_box.token_id, ["reviewer"])]  # latest report first
    assert [row.id for row in losing.themselves] == [owner.token_id]


def test_an_alias_last_reported_before_the_hub_recorded_its_token_is_named_as_such(network, make_actor):
    owner = make_actor(network, "owner")
    box = make_actor(network, "member")
    report_status(actor=box, alias="a-coder", resume_id="r-a-coder", status="idle")
    report_status(actor=box, alias="reviewer", resume_id="r-reviewer", status="idle")
    AgentSession.objects.filter(alias="a-coder").update(token=None)  # as migration 0015 leaves older rows

    losing = tokens_losing_access(actor=owner, network_id=network.pk)

    assert [[one.alias for one in acting.aliases] for acting in losing.tokens] == [["reviewer"]]
    assert losing.unattributed == ["a-coder"]
    assert losing.agents == ["a-coder", "reviewer"]


def test_losing_access_names_the_agents_no_live_bound_token_acts_as(network, make_actor):
    owner = make_actor(network, "owner")
    token_create(network=network, name="box", aliases="a-coder, build-*")
    revoked, _ = token_create(network=network, name="old-box", aliases="reviewer")
    token_revoke(token=revoked)
    token_create(network=network, name="watcher", role="viewer", aliases="watched")  # a viewer acts as no agent
    carol = user_get_or_create(username="carol")
    membership_set(user=carol, network=network)
    token_create(user=carol, aliases="carol-agent")
    for alias in ("a-coder", "build-1", "build-2", "reviewer", "watched", "carol-agent", "stray"):
        report_status(actor=owner, alias=alias, resume_id=f"r-{alias}", status="idle")

    losing = tokens_losing_access(actor=owner, network_id=network.pk)

    assert losing.agents == ["reviewer", "stray", "watched"]
