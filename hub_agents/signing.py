"""The hub's signing key: made on first need, kept in the database, its public half published.

One ES256 key (ECDSA on P-256: the algorithm the A2A spec's examples use, which every JOSE library
verifies) signs the hub's A2A agent cards (hub_api.cards). Every process reads it from the database
(SigningKey), where the first use made it: processes racing to that first use insert under one
unique purpose, the losers read the winner's row, and so every card names the same key.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from joserfc import jws
from joserfc.jwk import ECKey

from hub_agents.models import SigningKey

ALG = "ES256"
CURVE = "P-256"
Purpose = SigningKey.Purpose


def detached_signature(payload: bytes, *, jku: str, purpose: str = Purpose.AGENT_CARDS) -> dict[str, str]:
    """A JWS (RFC 7515) over `payload`, which it leaves out (appendix F): its `protected` header
    (alg, typ, kid, and jku: where the key set is published) and its `signature`, base64url both."""
    row = _key_row(purpose)
    header = {"alg": ALG, "typ": "JOSE", "kid": row.kid, "jku": jku}
    protected, _, signature = jws.serialize_compact(header, payload, _imported(row.private_pem), [ALG]).split(".")
    return {"protected": protected, "signature": signature}


def public_key_set() -> dict[str, Any]:
    """The JWK Set (RFC 7517) of every key the hub signs with: public halves only."""
    _key_row(Purpose.AGENT_CARDS)  # the key a card will be signed with is there before anyone asks for a card
    return {
        "keys": [
            {**_imported(row.private_pem).as_dict(private=False), "kid": row.kid, "use": "sig", "alg": ALG}
            for row in SigningKey.objects.order_by("created_at", "pk")
        ]
    }


def _key_row(purpose: str) -> SigningKey:
    row = SigningKey.objects.filter(purpose=purpose).first()
    if row is not None:
        return row
    key = _generated()
    # Racers that all found none each made a key: the unique purpose lets one row in, and
    # get_or_create hands the others that row (its IntegrityError path reads it back).
    row, _ = SigningKey.objects.get_or_create(
        purpose=purpose, defaults={"kid": key.thumbprint(), "private_pem": key.as_pem(private=True).decode()}
    )
    return row


def _generated() -> ECKey:
    return ECKey.generate_key(CURVE, private=True)


@lru_cache(maxsize=8)
def _imported(private_pem: str) -> ECKey:
    return ECKey.import_key(private_pem)
