"""Bindings and policies at their edges, through the tools (the matrix is tests/test_access_identity.py):
patterns, who a write is from when from_session is left out, a token acting as itself, a user token
whose networks differ in policy, and the policy's change and audit row."""

from __future__ import annotations

import pytest

from hub_agents.models import AuditEntry, Network
from hub_agents.services import (
    membership_set,
    network_create,
    network_policy_set,
    token_authenticate,
    token_create,
    user_get_or_create,
)
from hub_core.errors import HubError
from hub_tasks.models import Task
from tests.helpers.access import make_strict
from tests.helpers.calls import (
    channel_create,
    channel_read,
    get_inbox,
    report_completion,
    report_status,
    send_task,
)


def bound(network: Network, *aliases: str, name: str = "bound", role: str = "member"):
    return token_authenticate(raw=token_create(network=network, role=role, name=name, aliases=list(aliases))[1])


def refused(call, **arguments) -> HubError:
    with pytest.raises(HubError) as caught:
        call(**arguments)
    return caught.value


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("pattern", "alias", "matches"),
    [
        ("build-*", "build-1", True),
        ("build-*", "build-", True),
        ("build-*", "rebuild-1", False),
        ("*-coder", "a-coder", True),
        ("a.b", "a.b", True),
        ("a.b", "axb", False),  # a dot is a dot, not any character
        ("a[1]", "a[1]", True),
        ("a+", "aa", False),
    ],
)
def test_a_pattern_binds_what_its_stars_cover_and_nothing_else(network, pattern, alias, matches) -> None:
    token = bound(network, pattern)

    if matches:
        assert report_status(actor=token, resume_id="r", alias=alias, status="idle")["alias"] == alias
    else:
        assert refused(report_status, actor=token, resume_id="r", alias=alias, status="idle").code == "alias_not_yours"


@pytest.mark.django_db
def test_a_binding_is_checked_when_the_token_is_made(network) -> None:
    for bad in (["*"], ["**"], ["x" * 201]):
        with pytest.raises(HubError) as caught:
            token_create(network=network, aliases=bad)
        assert caught.value.code == "invalid_argument"
    token, _ = token_create(network=network, aliases="a-coder, build-*\n a-coder,,")
    assert token.aliases == ["a-coder", "build-*"]
    assert token_create(network=network, aliases="night shift, day shift")[0].aliases == ["night shift", "day shift"]
    entry = AuditEntry.objects.get(action=AuditEntry.Action.TOKEN_CREATED, target__contains=token.prefix)
    assert entry.detail["aliases"] == ["a-coder", "build-*"]


@pytest.mark.django_db
@pytest.mark.parametrize("policy", ["open", "strict"])
def test_a_token_bound_to_one_alias_sends_as_it_and_one_bound_to_several_must_say_which(network, policy) -> None:
    network_policy_set(network=network, policy=policy, by="test")
    one, several = bound(network, "a-coder"), bound(network, "a-coder", "build-*", name="node")

    sent = send_task(actor=one, alias="helper", task="t1")
    assert Task.objects.get(pk=sent["task_id"]).from_name == "a-coder"
    problem = refused(send_task, actor=several, alias="helper", task="t2")
    assert (problem.code, problem.extra["field"]) == ("invalid_argument", "from_session")
    sent = send_task(actor=several, alias="helper", task="t3", from_session="build-7")
    assert Task.objects.get(pk=sent["task_id"]).from_name == "build-7"
    assert refused(send_task, actor=one, alias="helper", task="t4", from_session="hub").code == "alias_not_yours"


@pytest.mark.django_db
def test_an_unbound_token_in_a_strict_network_acts_as_itself_and_never_as_an_alias(network, agent) -> None:
    sent = send_task(actor=agent, alias="helper", task="open network", from_session="a-coder")
    assert Task.objects.get(pk=sent["task_id"]).from_name == "a-coder"  # open: as the contract has it
    make_strict(network)

    sent = send_task(actor=agent, alias="helper", task="strict network")
    assert Task.objects.get(pk=sent["task_id"]).from_name == "token:member-token"
    assert send_task(actor=agent, alias="helper", task="named", from_session="token:member-token")["ok"]
    assert refused(send_task, actor=agent, alias="helper", task="x", from_session="a-coder").code == "alias_not_yours"
    assert refused(report_status, actor=agent, resume_id="r", alias="a-coder", status="idle").code == "alias_not_yours"


@pytest.mark.django_db
def test_owners_moderate_channels_in_a_strict_network_but_never_act_as_an_agent(network) -> None:
    owner = token_authenticate(raw=token_create(network=network, role="owner", name="boss")[1])
    coder = bound(network, "a-coder")
    room = channel_create(actor=coder, name="room", alias="a-coder", type="direct", members=["b-coder"])["channel_id"]
    make_strict(network)

    assert channel_read(actor=owner, channel_id=room, alias="a-coder")["channel_id"] == room
    assert refused(get_inbox, actor=owner, alias="a-coder").code == "alias_not_yours"
    # A bound token that leaves its alias out reads as itself.
    assert channel_read(actor=coder, channel_id=room)["channel_id"] == room


@pytest.mark.django_db
def test_a_user_in_an_open_and_a_strict_network_reads_an_inbox_only_where_it_may_be_the_agent(network) -> None:
    other = make_strict(network_create(name="beta")[0])
    for net in (network, other):
        report_status(
            actor=bound(net, "a-coder", name=f"agent-{net.name}"), resume_id="r", alias="a-coder", status="idle"
        )
        send_task(actor=bound(net, "lead"), alias="a-coder", task=f"work in {net.name}")
    user = user_get_or_create(username="ada")
    membership_set(user=user, network=network, role="member")
    membership_set(user=user, network=other, role="member")
    ada = token_authenticate(raw=token_create(user=user)[1])

    rows = get_inbox(actor=ada, alias="a-coder")["messages"]

    assert [row["network_id"] for row in rows] == [network.pk]
    assert refused(get_inbox, actor=ada, alias="a-coder", network_id=other.pk).code == "alias_not_yours"


@pytest.mark.django_db
def test_a_policy_change_is_audited_once_and_reaches_the_next_call(network, agent) -> None:
    assert report_status(actor=agent, resume_id="r", alias="a-coder", status="idle")["ok"]

    assert network_policy_set(network=network, policy="strict", by="user:ada") is True
    assert network_policy_set(network=network, policy="strict", by="user:ada") is False

    assert refused(report_status, actor=agent, resume_id="r", alias="a-coder", status="idle").code == "alias_not_yours"
    (entry,) = AuditEntry.objects.filter(action=AuditEntry.Action.NETWORK_POLICY_CHANGED)
    assert (entry.actor, entry.detail) == ("user:ada", {"before": "open", "after": "strict"})


@pytest.mark.django_db
@pytest.mark.parametrize("policy", ["open", "strict"])
def test_a_bound_token_closes_only_the_tasks_of_its_own_aliases(network, agent, policy) -> None:
    victim, mallory = bound(network, "a-victim", name="victim"), bound(network, "a-mallory", name="mallory")
    task_id = send_task(actor=agent, alias="a-victim", task="the victim's work", from_session="token:member-token")[
        "task_id"
    ]
    network_policy_set(network=network, policy=policy, by="test")

    forged = refused(report_completion, actor=mallory, alias="a-mallory", task=task_id, result="forged")

    assert forged.code == "alias_not_yours"
    assert Task.objects.get(pk=task_id).status == "delivered"
    assert report_completion(actor=victim, alias="a-victim", task=task_id, result="done")["task_id"] == task_id
    assert Task.objects.get(pk=task_id).status == "replied"


@pytest.mark.django_db
def test_an_unbound_token_in_an_open_network_closes_any_task_by_id_as_the_contract_has_it(network, agent) -> None:
    task_id = send_task(actor=agent, alias="a-victim", task="work")["task_id"]

    assert report_completion(actor=agent, alias="someone-else", task=task_id, result="done")["task_id"] == task_id
