"""Signed A2A agent cards (issue 26 item 5): every card the hub serves carries a JWS by the hub's
key, checked here as an A2A client checks it: a2a-sdk's verifier (PyJWT, another JOSE library than
the hub's), with the key set published at the signature's `jku`. And what a card says about who may
act as its agent: the network's identity policy, and whether a live token is bound to the alias.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import threading
from typing import Any

import pytest
from a2a.utils.signing import InvalidSignaturesError
from django.test import Client
from google.protobuf.json_format import MessageToDict
from joserfc.jwk import ECKey

from hub_agents import signing
from hub_agents.models import Network, SigningKey
from hub_agents.services import (
    membership_set,
    network_create,
    network_policy_set,
    token_create,
    token_revoke,
    user_get_or_create,
)
from tests.helpers.calls import report_status
from tests.helpers.cards import JWKS, published_keys, strict, verified, verify
from tests.helpers.races import race

pytestmark = pytest.mark.django_db

HUB_CARD = "/.well-known/agent-card.json"
IDENTITY = "urn:commhub:a2a:identity:v1"
CARDS = ["hub", "network", "agent"]


def bearer(network: Network, role: str = "member", **bound: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {token_create(network=network, role=role, name=f'{role}-cards', **bound)[1]}"}


def card_body(client: Client, network: Network, which: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    url = {
        "hub": HUB_CARD,
        "network": f"/api/v1/networks/{network.pk}/agent-card.json",
        "agent": f"/api/v1/networks/{network.pk}/agents/coder/agent-card.json",
    }[which]
    response = client.get(url, headers=headers if headers is not None else bearer(network, "viewer"))
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def coder(agent) -> None:
    report_status(actor=agent, resume_id="resume-coder", alias="coder", status="idle", skills=["python"])


def protected_header(body: dict[str, Any]) -> dict[str, Any]:
    (signature,) = body["signatures"]
    encoded = signature["protected"]
    return json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# --- signed, and verified as a client verifies --------------------------------------------------


@pytest.mark.parametrize("which", CARDS)
def test_every_card_is_signed_by_the_key_its_jku_publishes(client: Client, network, coder, which: str) -> None:
    body = card_body(client, network, which)

    verified(client, body)
    header = protected_header(body)
    (key,) = published_keys(client)["keys"]
    assert header == {"alg": "ES256", "typ": "JOSE", "kid": key["kid"], "jku": "http://testserver" + JWKS}
    assert set(body["signatures"][0]) == {"protected", "signature"}


@pytest.mark.parametrize("which", CARDS)
def test_a_card_changed_by_one_character_fails_verification(client: Client, network, coder, which: str) -> None:
    body = card_body(client, network, which)
    keys = published_keys(client)
    verify(strict(body), lambda jku: keys)

    description = body["description"]
    changed = {**body, "description": description[:-1] + chr(ord(description[-1]) ^ 1)}
    with pytest.raises(InvalidSignaturesError):
        verify(strict(changed), lambda jku: keys)


def test_a_forged_binding_fails_verification(client: Client, network, coder) -> None:
    body = card_body(client, network, "agent")
    (extension,) = body["capabilities"]["extensions"]
    assert extension["params"]["bound"] is False
    keys = published_keys(client)

    forged = copy.deepcopy(body)
    forged["capabilities"]["extensions"][0]["params"]["bound"] = True
    with pytest.raises(InvalidSignaturesError):
        verify(strict(forged), lambda jku: keys)


def test_a_key_set_with_another_key_under_the_same_kid_fails_verification(client: Client) -> None:
    body = client.get(HUB_CARD).json()
    (published,) = published_keys(client)["keys"]
    other = {**ECKey.generate_key("P-256", private=True).as_dict(private=False), "kid": published["kid"]}

    with pytest.raises(InvalidSignaturesError):
        verify(strict(body), lambda jku: {"keys": [{**published, **other}]})


def test_a_card_with_text_beyond_ascii_verifies(client: Client, make_actor) -> None:
    # JCS writes non-ASCII as UTF-8, and the hub's JSON \\u-escapes it: signer and verifier must agree.
    network = network_create(name="Équipe 🚀 ñ")[0]
    report_status(actor=make_actor(network), resume_id="r", alias="coder", status="idle", model="modèle-🦀")

    for which in ("network", "agent"):
        card = verified(client, card_body(client, network, which))
        assert "Équipe 🚀 ñ" in card.description


# --- the key -------------------------------------------------------------------------------------


def test_the_key_set_is_public_cacheable_and_holds_only_public_halves(client: Client) -> None:
    response = client.get(JWKS)  # no token

    assert response.status_code == 200
    assert response["Content-Type"] == "application/jwk-set+json"
    assert response["Cache-Control"].startswith("public, max-age=")
    (key,) = response.json()["keys"]
    assert {name: key[name] for name in ("kty", "crv", "use", "alg")} == {
        "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256",
    }  # fmt: skip
    assert set(key) == {"kty", "crv", "x", "y", "kid", "use", "alg"}  # no "d": nothing private
    # The kid is the key's RFC 7638 thumbprint: the required members, JCS-ordered, SHA-256.
    required = json.dumps({name: key[name] for name in ("crv", "kty", "x", "y")}, separators=(",", ":"))
    assert key["kid"] == b64url(hashlib.sha256(required.encode()).digest())
    as_json = client.get(JWKS, headers={"Accept": "application/json"})
    assert as_json["Content-Type"] == "application/json" and as_json.json() == response.json()


def test_the_key_set_answers_only_get(client: Client) -> None:
    assert client.post(JWKS, data="{}", content_type="application/json").status_code == 405


def test_the_key_is_made_once_and_kept(client: Client, network, coder) -> None:
    assert not SigningKey.objects.exists()

    kids = {protected_header(card_body(client, network, which))["kid"] for which in CARDS * 2}
    (key,) = published_keys(client)["keys"]

    assert kids == {key["kid"]}
    assert list(SigningKey.objects.values_list("kid", flat=True)) == [key["kid"]]


def test_the_key_set_made_first_holds_the_key_cards_are_signed_with(client: Client) -> None:
    (key,) = published_keys(client)["keys"]  # before any card: it makes the key

    assert protected_header(client.get(HUB_CARD).json())["kid"] == key["kid"]


# --- caching -------------------------------------------------------------------------------------


def test_the_hub_card_etag_holds_across_signings_and_changes_with_the_key(client: Client) -> None:
    first = client.get(HUB_CARD)
    again = client.get(HUB_CARD)

    assert first["ETag"] == again["ETag"]  # the same card by the same key, however it was signed
    assert client.get(HUB_CARD, headers={"If-None-Match": first["ETag"]}).status_code == 304

    SigningKey.objects.all().delete()  # an operator replaces the key: the next use makes another
    renewed = client.get(HUB_CARD)

    assert renewed["ETag"] != first["ETag"]
    assert client.get(HUB_CARD, headers={"If-None-Match": first["ETag"]}).status_code == 200
    assert protected_header(renewed.json())["kid"] != protected_header(first.json())["kid"]
    verified(client, renewed.json())
    with pytest.raises(InvalidSignaturesError):  # the old card does not verify with the new key set
        verify(strict(first.json()), lambda jku: published_keys(client, jku))


# --- who may act as the agent --------------------------------------------------------------------


def identity(client: Client, network: Network, which: str = "agent") -> dict[str, Any]:
    card = strict(card_body(client, network, which))
    (extension,) = card.capabilities.extensions
    assert extension.uri == IDENTITY and extension.description
    return MessageToDict(extension.params)


def test_an_agent_card_says_whether_a_live_token_is_bound_to_its_alias(client: Client, network, coder) -> None:
    assert identity(client, network) == {"network": network.pk, "policy": "open", "alias": "coder", "bound": False}

    token_create(network=network, role="member", aliases=["tester", "build-*"])
    token_create(network=network, role="viewer", aliases=["coder"])  # a viewer acts as no agent
    assert identity(client, network)["bound"] is False

    pattern, _ = token_create(network=network, role="member", aliases=["cod*"])
    assert identity(client, network)["bound"] is True

    token_revoke(token=pattern)
    assert identity(client, network)["bound"] is False


def test_a_user_token_binds_only_where_its_user_may_write(client: Client, network, other_network, coder) -> None:
    ana = user_get_or_create(username="ana")
    token_create(user=ana, aliases=["coder"])

    membership_set(user=ana, network=other_network, role="member")
    membership_set(user=ana, network=network, role="viewer")
    assert identity(client, network)["bound"] is False

    membership_set(user=ana, network=network, role="member")
    assert identity(client, network)["bound"] is True

    ana.is_active = False
    ana.save(update_fields=["is_active"])
    assert identity(client, network)["bound"] is False


def test_the_cards_state_the_networks_identity_policy(client: Client, network, coder) -> None:
    network_policy_set(network=network, policy="strict", by="test")

    assert identity(client, network, "network") == {"network": network.pk, "policy": "strict"}
    assert identity(client, network)["policy"] == "strict"
    assert not strict(card_body(client, network, "hub")).capabilities.extensions  # the hub's names no network


# --- two first uses at once ----------------------------------------------------------------------


@pytest.mark.race
@pytest.mark.django_db(transaction=True)
def test_two_first_uses_at_once_make_one_key(monkeypatch) -> None:
    both_missed = threading.Barrier(2)
    made = signing._generated

    def generated() -> ECKey:
        both_missed.wait(timeout=10)  # each racer found no key: both go on to make one
        return made()

    monkeypatch.setattr(signing, "_generated", generated)

    first, second = race(lambda: signing.public_key_set(), lambda: signing.public_key_set())

    assert first == second
    (key,) = first["keys"]
    assert list(SigningKey.objects.values_list("kid", flat=True)) == [key["kid"]]
