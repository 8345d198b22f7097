"""A2A v1.0 agent cards: the hub's at /.well-known/agent-card.json (public), each network's and each
agent's under /api/v1/networks/{network_id}/ (a token or login that may read the network).

Every card is read as an A2A client reads it and parsed strictly with a2a-sdk's own types: an
unknown field fails the parse, and every field the spec marks REQUIRED must be there.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from a2a.types import AgentCard
from a2a.utils.errors import InvalidParamsError
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpResponse
from django.test import Client
from google.protobuf.json_format import ParseError

from commhub.asgi import application
from commhub.lean import is_lean
from commhub.logs import with_request_context
from hub_agents.actors import Actor
from hub_agents.models import Network
from hub_agents.services import membership_set, token_create, user_get_or_create
from tests.helpers.asgi import ask, scope
from tests.helpers.calls import report_status
from tests.helpers.cards import published_keys, strict, verify
from tests.helpers.mcp import LATEST, rpc
from tests.helpers.rest import assert_refused

pytestmark = pytest.mark.django_db

HUB_CARD = "/.well-known/agent-card.json"


def network_card_url(network_id: str) -> str:
    return f"/api/v1/networks/{network_id}/agent-card.json"


def agent_card_url(network_id: str, alias: str) -> str:
    return f"/api/v1/networks/{network_id}/agents/{alias}/agent-card.json"


def raw_token(network: Network, role: str = "member") -> str:
    return token_create(network=network, role=role, name=f"{role}-cards")[1]


def bearer(network: Network, role: str = "member") -> dict[str, str]:
    return {"Authorization": f"Bearer {raw_token(network, role)}"}


def card_of(response: HttpResponse) -> AgentCard:
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("application/json")
    return strict(response.json())


def report(actor: Actor, alias: str, **fields: Any) -> None:
    report_status(actor=actor, resume_id=f"resume-{alias}", alias=alias, status=fields.pop("status", "idle"), **fields)


# --- the validator itself ------------------------------------------------------------------------


def test_the_strict_parse_refuses_an_unknown_field_and_a_missing_required_one(client: Client) -> None:
    body = client.get(HUB_CARD).json()
    strict(body)

    with pytest.raises(ParseError):
        strict({**body, "url": "https://example.com/a2a"})  # a v0.3 field: not in the v1.0 card
    with pytest.raises(InvalidParamsError):
        strict({key: value for key, value in body.items() if key != "skills"})


# --- the hub's card ------------------------------------------------------------------------------


def test_the_hub_card_is_public_and_names_the_hub_endpoints_and_auth(client: Client) -> None:
    card = card_of(client.get(HUB_CARD, secure=True))  # no token

    assert card.name == "CommHub"
    assert card.description and card.version
    assert [(i.url, i.tenant) for i in card.supported_interfaces] == [
        ("https://testserver/mcp", ""),
        ("https://testserver/api/v1/", ""),
    ]
    assert all(i.protocol_version == "1.0" for i in card.supported_interfaces)
    # Not A2A's own bindings: CommHub serves MCP and its REST API, not A2A's operations.
    assert not {i.protocol_binding for i in card.supported_interfaces} & {"JSONRPC", "GRPC", "HTTP+JSON"}
    (scheme,) = card.security_schemes.values()
    assert scheme.http_auth_security_scheme.scheme == "Bearer"
    (requirement,) = card.security_requirements
    assert list(requirement.schemes) == list(card.security_schemes)
    assert card.capabilities.streaming is True
    assert card.default_input_modes and card.default_output_modes


def test_the_hub_card_is_built_from_the_request_host_and_scheme(client: Client, settings) -> None:
    settings.ALLOWED_HOSTS = ["hub.example"]

    card = card_of(client.get(HUB_CARD, headers={"Host": "hub.example"}))

    assert [i.url for i in card.supported_interfaces] == ["http://hub.example/mcp", "http://hub.example/api/v1/"]
    assert card.documentation_url == "http://hub.example/api/v1/docs"


def test_the_hub_card_skills_are_the_tools_mcp_lists(client: Client, network) -> None:
    tools = rpc(client, "tools/list", token=raw_token(network), version=LATEST).json()["result"]["tools"]

    card = card_of(client.get(HUB_CARD))

    assert [(s.id, s.name, s.description) for s in card.skills] == [
        (tool["name"], tool["title"], tool["description"]) for tool in tools
    ]
    reads = {tool["name"] for tool in tools if tool["annotations"]["readOnlyHint"]}
    assert {s.id for s in card.skills if "read" in s.tags} == reads
    assert {s.id for s in card.skills if "write" in s.tags} == {tool["name"] for tool in tools} - reads


def test_the_hub_card_leads_to_its_endpoints(client: Client, network) -> None:
    agent_token = raw_token(network)
    card = card_of(client.get(HUB_CARD))
    mcp, rest = (i.url.removeprefix("http://testserver") for i in card.supported_interfaces)

    listed = rpc(client, "tools/list", token=agent_token, version=LATEST, path=mcp)
    schema = client.get(card.supported_interfaces[1].protocol_binding.removeprefix("http://testserver"))
    tasks = client.get(rest + "tasks", headers={"Authorization": f"Bearer {agent_token}"})

    assert listed.status_code == 200 and listed.json()["result"]["tools"]
    assert schema.status_code == 200 and "openapi" in schema.content.decode()
    assert tasks.status_code == 200 and tasks.json()["ok"] is True


def test_the_hub_card_is_cacheable_and_revalidates(client: Client) -> None:
    first = client.get(HUB_CARD)

    assert first["Cache-Control"].startswith("public, max-age=")
    again = client.get(HUB_CARD, headers={"If-None-Match": first["ETag"]})
    assert again.status_code == 304
    assert again["ETag"] == first["ETag"]
    assert client.get(HUB_CARD, headers={"If-None-Match": 'W/"other"'}).status_code == 200


def test_the_hub_card_answers_only_get(client: Client) -> None:
    assert_refused(client.post(HUB_CARD, data="{}", content_type="application/json"), 405, "method_not_allowed")


# --- a network's card ----------------------------------------------------------------------------


def test_the_network_card_skills_are_the_union_of_its_agents_skills(client: Client, network, agent) -> None:
    report(agent, "coder", skills=["python", "review"], status="working")
    report(agent, "tester", skills=["python", "testing"])
    report(agent, "quiet")  # never said what it can do

    card = card_of(client.get(network_card_url(network.pk), headers=bearer(network, "viewer")))

    assert card.name == network.name
    assert {i.tenant for i in card.supported_interfaces} == {network.pk}
    skills = {skill.id: skill for skill in card.skills}
    assert list(skills) == ["python", "review", "testing"]
    assert all(list(skill.tags) == [tag] for tag, skill in skills.items())
    assert "coder (working)" in skills["python"].description and "tester (idle)" in skills["python"].description
    assert "tester" not in skills["review"].description and "quiet" not in skills["python"].description


def test_the_network_card_follows_what_agents_report_next(client: Client, network, agent) -> None:
    report(agent, "coder", skills=["python"])
    report(agent, "coder", skills=["rust"])  # a later report replaces its skills
    report(agent, "tester", skills=["go"])
    report(agent, "tester", status="working")  # left out: kept

    card = card_of(client.get(network_card_url(network.pk), headers=bearer(network)))

    assert [skill.id for skill in card.skills] == ["go", "rust"]


def test_a_network_whose_agents_reported_no_skills_still_has_a_valid_card(client: Client, network, agent) -> None:
    report(agent, "quiet")

    card = card_of(client.get(network_card_url(network.pk), headers=bearer(network)))

    (skill,) = card.skills  # the spec asks for at least one: what every agent here takes
    assert skill.id == "commhub:tasks"


def test_an_empty_network_has_a_valid_card(client: Client, network) -> None:
    card = card_of(client.get(network_card_url(network.pk), headers=bearer(network)))

    assert [skill.id for skill in card.skills] == ["commhub:tasks"]


def test_a_member_reads_its_networks_cards_with_a_user_token_or_its_login(client: Client, network, agent) -> None:
    report(agent, "coder", skills=["python"])
    user = user_get_or_create(username="ana")
    membership_set(user=user, network=network, role="viewer")
    _, raw = token_create(user=user)
    browser = Client()
    browser.force_login(user)

    by_token = card_of(client.get(network_card_url(network.pk), headers={"Authorization": f"Bearer {raw}"}))
    by_login = card_of(browser.get(agent_card_url(network.pk, "coder")))

    assert [skill.id for skill in by_token.skills] == ["python"]
    assert by_login.name == "coder"


# --- an agent's card -----------------------------------------------------------------------------


def test_the_agent_card_describes_what_the_agent_reported(client: Client, network, agent) -> None:
    report(
        agent, "coder", status="working", skills=["python", "code-review"], agent="claude-code", model="opus-4",
        version="2.1.0",
    )  # fmt: skip

    card = card_of(client.get(agent_card_url(network.pk, "coder"), headers=bearer(network), secure=True))

    assert card.name == "coder"
    assert card.version == "2.1.0"
    for said in ("claude-code", "opus-4", "working", "last seen", network.name):
        assert said in card.description, said
    assert [skill.id for skill in card.skills] == ["python", "code-review"]
    assert [(i.url, i.tenant) for i in card.supported_interfaces] == [
        ("https://testserver/mcp", network.pk),
        ("https://testserver/api/v1/", network.pk),
    ]
    (scheme,) = card.security_schemes.values()
    assert scheme.http_auth_security_scheme.scheme == "Bearer"


def test_the_agent_card_shows_cleared_skills_and_a_stale_heartbeat(
    client: Client, network, agent, clock, settings
) -> None:
    report(agent, "coder", skills=["python"])
    report(agent, "coder", skills=[])  # []: it can do nothing in particular any more
    clock.tick(settings.COMMHUB_OFFLINE_AFTER_SECONDS + 1)

    card = card_of(client.get(agent_card_url(network.pk, "coder"), headers=bearer(network)))

    assert [skill.id for skill in card.skills] == ["commhub:tasks"]
    assert "offline" in card.description
    assert card.version  # it reported none: still there, as the spec requires


def test_an_unknown_alias_is_not_found(client: Client, network, other_network, outsider) -> None:
    report(outsider, "spy", skills=["python"])  # in the other network: not an agent of this one

    for alias in ("nobody", "spy"):
        response = client.get(agent_card_url(network.pk, alias), headers=bearer(network))
        assert_refused(response, 404, "agent_not_found")


def test_an_over_long_alias_is_an_invalid_argument(client: Client, network) -> None:
    response = client.get(agent_card_url(network.pk, "a" * 201), headers=bearer(network))

    assert_refused(response, 400, "invalid_argument", field="alias")


# --- who may read them ---------------------------------------------------------------------------


@pytest.mark.parametrize("card", ["network", "agent"])
def test_network_and_agent_cards_need_a_token(client: Client, network, agent, card: str) -> None:
    report(agent, "coder")
    url = network_card_url(network.pk) if card == "network" else agent_card_url(network.pk, "coder")

    for headers in ({}, {"Authorization": "Bearer ntok_unknown"}):
        response = client.get(url, headers=headers)
        assert_refused(response, 401, "unauthorized")
        assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("card", ["network", "agent"])
def test_another_networks_token_reads_neither_and_learns_nothing(
    client: Client, network, other_network, agent, card: str
) -> None:
    report(agent, "coder", skills=["python"])
    foreign = bearer(other_network)

    def refusal(network_id: str) -> dict[str, Any]:
        url = network_card_url(network_id) if card == "network" else agent_card_url(network_id, "coder")
        return assert_refused(client.get(url, headers=foreign), 403, "permission_denied")

    seen = refusal(network.pk)
    # A network that does not exist answers alike: the refusal does not tell one from the other.
    unseen = refusal("net_doesnotexist")
    assert seen["message"].replace(network.pk, "?") == unseen["message"].replace("net_doesnotexist", "?")
    assert "python" not in json.dumps(seen)


def test_the_cards_of_members_are_never_cached(client: Client, network, agent) -> None:
    report(agent, "coder")

    for url in (network_card_url(network.pk), agent_card_url(network.pk, "coder")):
        assert client.get(url, headers=bearer(network))["Cache-Control"] == "no-store"


def test_the_cards_are_left_out_of_the_openapi_description(client: Client) -> None:
    paths = client.get("/api/v1/schema", {"format": "json"}).json()["paths"]

    assert not [path for path in paths if "agent-card" in path]


# --- through the ASGI app an agent reaches ----------------------------------------------------


@pytest.mark.django_db(transaction=True)  # the lean path runs the view on pool threads, on their own connections
def test_the_cards_answer_alike_through_the_lean_path_and_django(network, other_network, agent) -> None:
    report(agent, "coder", skills=["python"])
    member, foreign = bearer(network), bearer(other_network)
    cases = [
        (HUB_CARD, {}),
        (network_card_url(network.pk), member),
        (agent_card_url(network.pk, "coder"), member),
        (agent_card_url(network.pk, "nobody"), member),
        (network_card_url(network.pk), foreign),
        (network_card_url(network.pk), {}),
    ]

    for path, headers in cases:
        sent = {name.lower(): value for name, value in headers.items()}
        request = scope(method="GET", path=path, x_request_id="same-request", **sent)  # each answer echoes it
        assert is_lean(request) == (path != HUB_CARD and bool(headers))  # a bearer call to /api/v1/ goes lean
        fast = asyncio.run(ask(application, request))
        django = asyncio.run(ask(with_request_context(ASGIHandler()), request))  # as commhub.asgi wraps both
        assert unsigned(fast) == unsigned(django), path  # ES256 signs anew each time
        if fast[0] == 200:
            for answer in (fast, django):
                verify(strict(json.loads(answer[2])), lambda jku: published_keys(Client(), jku))


def unsigned(answer: tuple[int, dict[str, str], bytes]) -> tuple[int, dict[str, str], bytes]:
    """The answer with its card's signature values blanked (each the same length: ES256's 64 bytes)."""
    status, headers, body = answer
    for signature in json.loads(body).get("signatures", []) if status == 200 else []:
        body = body.replace(signature["signature"].encode(), b"-" * len(signature["signature"]))
    return status, headers, body
