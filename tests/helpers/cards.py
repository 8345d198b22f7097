"""A2A agent cards as a client checks them: parsed strictly by a2a-sdk, their signatures verified by
a2a-sdk's own verifier (PyJWT, not the hub's JOSE library) with the key set the hub publishes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from a2a.types import AgentCard
from a2a.utils.proto_utils import validate_proto_required_fields
from a2a.utils.signing import create_signature_verifier
from django.test import Client
from google.protobuf.json_format import ParseDict
from jwt import PyJWK, PyJWKSet
from jwt.exceptions import PyJWKError

JWKS = "/.well-known/jwks.json"


def strict(body: dict[str, Any]) -> AgentCard:
    """The card as a2a-sdk's AgentCard: no unknown field, every REQUIRED one present and non-empty."""
    card = ParseDict(body, AgentCard())  # without ignore_unknown_fields: an unknown field is a ParseError
    validate_proto_required_fields(card)
    return card


def published_keys(client: Client, jku: str = JWKS) -> dict[str, Any]:
    """The key set the hub publishes (at `jku`, a URL on the hub under test)."""
    response = client.get(urlsplit(jku).path)
    assert response.status_code == 200, response.content
    return response.json()


def verify(card: AgentCard, keys: Callable[[str], dict[str, Any]]) -> list[tuple[str | None, str | None]]:
    """Raise a2a.utils.signing's SignatureVerificationError unless a signature of the card verifies
    with the key its kid names in the key set `keys(jku)`; the (kid, jku) each signature tried named."""
    named: list[tuple[str | None, str | None]] = []

    def key_provider(kid: str | None, jku: str | None) -> PyJWK:
        named.append((kid, jku))
        assert kid is not None and jku is not None, (kid, jku)
        try:
            return PyJWKSet.from_dict(keys(jku))[kid]
        except KeyError as unknown:  # a key set without that kid: this signature does not verify
            raise PyJWKError(str(unknown)) from unknown

    create_signature_verifier(key_provider, algorithms=["ES256"])(card)
    return named


def verified(client: Client, body: dict[str, Any]) -> AgentCard:
    """The card, parsed strictly, once its one signature verified with the key set at its `jku`."""
    card = strict(body)
    assert len(card.signatures) == 1, body.get("signatures")
    ((_, jku),) = verify(card, lambda jku: published_keys(client, jku))
    assert urlsplit(jku).path == JWKS, jku
    return card
