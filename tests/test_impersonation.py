"""Impersonations, each refused in a strict network (issue 26).

In a strict network only a token bound to an alias acts as it. Mallory (a member token bound to
"a-mallory"), an unbound member token and a viewer token try to be the victim, "a-victim": report its
status, fetch and ack its inbox, post and configure as the owner of its channel, claim a pool task as
it, send as it, read its direct channel and search its channels' members-only posts. Each attempt,
over MCP and REST, is refused alias_not_yours, writes nothing and shows nothing of the victim's; the
control, the victim's own bound token making the same call, is answered (so each refusal is the rule
at work, not a broken call).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient, Client

from hub_agents.models import IdentityPolicy, Network
from hub_agents.services import network_create, network_policy_set, token_authenticate, token_create
from hub_tools.tools import TOOLS_BY_NAME
from tests.helpers.access import assert_answered, assert_tool_refused, invoke, rolled_back_data, writes_recorded
from tests.helpers.calls import channel_create, channel_post, report_status, send_message, send_task
from tests.helpers.rest import assert_refused

TRANSPORTS = ("mcp", "rest")


@dataclass
class Guarded:
    """A strict network: a-victim's inbox, channels and a pool task it could claim."""

    network: Network
    tokens: dict[str, str]  # who -> raw token
    message: str  # pending in a-victim's inbox, saying VICTIMS_EYES
    open: str  # an open pool task a-victim's skills cover
    room: str  # a group channel a-victim owns, a-friend a member; a-victim's post says "plans"
    direct: str  # a direct channel of a-victim and a-friend; a-friend's post says "whispered"

    def value(self, template: Any) -> Any:
        if isinstance(template, dict):
            return {key: self.value(item) for key, item in template.items()}
        if isinstance(template, str) and template.startswith("@"):
            return getattr(self, template[1:])
        return template


VICTIMS_EYES = "for the victim's eyes only"

# who -> (role, the aliases its token is bound to)
TOKENS = {
    "victim": ("member", ["a-victim"]),
    "mallory": ("member", ["a-mallory"]),
    "unbound": ("member", []),
    "viewer": ("viewer", []),
}


def build_guarded() -> Guarded:
    network = network_create(name="guarded")[0]
    tokens = {
        who: token_create(network=network, role=role, name=who, aliases=aliases)[1]
        for who, (role, aliases) in TOKENS.items()
    }
    seed = token_authenticate(raw=tokens["unbound"])  # builds while the network is still open
    for alias in ("a-victim", "a-mallory", "a-friend"):
        report_status(actor=seed, resume_id=f"{alias}-resume", alias=alias, status="idle", skills=["python"])
    message = send_message(actor=seed, alias="a-victim", message=VICTIMS_EYES, from_session="a-friend")
    open_task = send_task(
        actor=seed, alias="pool", task="an open task", from_session="a-friend", required_skills=["python"]
    )["task_id"]
    room = channel_create(actor=seed, name="victims-room", alias="a-victim", members=["a-friend"])["channel_id"]
    channel_post(actor=seed, channel_id=room, alias="a-victim", content="our secret plans")
    direct = channel_create(actor=seed, name="victim-friend", alias="a-victim", type="direct", members=["a-friend"])
    channel_post(actor=seed, channel_id=direct["channel_id"], alias="a-friend", content="whispered to the victim")
    network_policy_set(network=network, policy=IdentityPolicy.STRICT, by="test")
    return Guarded(
        network=network,
        tokens=tokens,
        message=message["message_id"],
        open=open_task,
        room=room,
        direct=direct["channel_id"],
    )


# impersonation -> (tool, its call as a-victim, who tries it, what only a-victim's own call shows)
IMPERSONATIONS: dict[str, tuple[str, dict[str, Any], tuple[str, ...], str | None]] = {
    "report_status-as_another": (
        "report_status",
        {"resume_id": "a-victim-resume", "alias": "a-victim", "status": "working", "task": "hijacked"},
        ("mallory", "unbound"),
        None,
    ),
    "get_inbox-of_another": ("get_inbox", {"alias": "a-victim"}, ("mallory", "unbound", "viewer"), VICTIMS_EYES),
    "ack_inbox-of_another": (
        "ack_inbox",
        {"alias": "a-victim", "message_id": "@message"},
        ("mallory", "unbound"),
        None,
    ),
    "channel_post-as_owner": (
        "channel_post",
        {"channel_id": "@room", "alias": "a-victim", "content": "forged"},
        ("mallory", "unbound"),
        None,
    ),
    "channel_configure-as_owner": (
        "channel_configure",
        {"channel_id": "@room", "alias": "a-victim", "description": "forged", "retention_max_posts": 1},
        ("mallory", "unbound"),
        None,
    ),
    "claim_task-as_another": ("claim_task", {"task_id": "@open", "alias": "a-victim"}, ("mallory", "unbound"), None),
    "send_message-as_another": (
        "send_message",
        {"alias": "a-friend", "message": "forged", "from_session": "a-victim"},
        ("mallory", "unbound"),
        None,
    ),
    "channel_read-direct_naming_a_member": (
        "channel_read",
        {"channel_id": "@direct", "alias": "a-victim"},
        ("viewer", "mallory", "unbound"),
        "whispered",
    ),
    "search-members_only_posts_naming_a_member": (
        "search",
        {"query": "plans", "alias": "a-victim"},
        ("viewer", "mallory", "unbound"),
        "plans",
    ),
}


def attempts() -> list[Any]:
    return [
        pytest.param(transport, case, who, id=f"{transport}-{case}-{who}")
        for transport in TRANSPORTS
        for case, (_, _, impostors, _) in IMPERSONATIONS.items()
        for who in impostors
    ]


def controls() -> list[Any]:
    return [
        pytest.param(transport, case, id=f"{transport}-{case}") for transport in TRANSPORTS for case in IMPERSONATIONS
    ]


@pytest.fixture(scope="class")
def guarded_world(django_db_setup: None, django_db_blocker: Any) -> Iterator[Guarded]:
    with django_db_blocker.unblock(), rolled_back_data(build_guarded) as world:
        yield world


@pytest.mark.django_db
class TestImpersonations:
    @pytest.fixture
    def world(self, guarded_world: Guarded) -> Guarded:
        return guarded_world

    @pytest.mark.parametrize(("transport", "case", "who"), attempts())
    def test_each_impersonation_is_refused_in_a_strict_network(
        self, client: Client, world: Guarded, transport: str, case: str, who: str
    ) -> None:
        tool, template, _, shown = IMPERSONATIONS[case]

        with writes_recorded() as written:
            outcome = invoke(client, transport, world.tokens[who], tool, world.value(template))

        refusal = assert_tool_refused(outcome, "alias_not_yours")
        assert "a-victim" in refusal["message"]
        assert written == []
        for secret in (VICTIMS_EYES, "plans", "whispered", shown or VICTIMS_EYES):
            assert secret not in json.dumps(outcome.body)

    @pytest.mark.parametrize(("transport", "case"), controls())
    def test_control_the_victims_own_token_makes_the_same_call(
        self, client: Client, world: Guarded, transport: str, case: str
    ) -> None:
        tool, template, _, shown = IMPERSONATIONS[case]

        with writes_recorded() as written:
            body = assert_answered(invoke(client, transport, world.tokens["victim"], tool, world.value(template)))

        if TOOLS_BY_NAME[tool].read_only:
            assert shown is not None and shown in json.dumps(body), body
        else:
            assert written, "the victim's own write lands"

    @pytest.mark.parametrize("who", ["viewer", "mallory", "unbound"])
    @pytest.mark.parametrize("transport", TRANSPORTS)
    def test_without_naming_a_member_search_finds_no_members_only_post(
        self, client: Client, world: Guarded, transport: str, who: str
    ) -> None:
        """What the alias would open: left out, search answers without the room's posts."""
        body = assert_answered(invoke(client, transport, world.tokens[who], "search", {"query": "plans"}))

        assert "plans" not in json.dumps(body["results"]), body

    @pytest.mark.parametrize("who", ["mallory", "unbound", "viewer"])
    def test_the_event_stream_of_another_agent_is_refused(self, client: Client, world: Guarded, who: str) -> None:
        response = client.get("/events/a-victim", headers={"Authorization": f"Bearer {world.tokens[who]}"})

        assert_refused(response, 403, "alias_not_yours")

    def test_control_the_victims_own_token_opens_its_event_stream(self, world: Guarded) -> None:
        async def first_frame() -> tuple[int, bytes]:
            headers = {"Authorization": f"Bearer {world.tokens['victim']}"}
            stream = await AsyncClient().get("/events/a-victim", headers=headers)
            first = await anext(aiter(stream.streaming_content))
            await stream.streaming_content.aclose()
            return stream.status_code, first

        assert async_to_sync(first_frame)() == (200, b"retry: 2000\n\n")
