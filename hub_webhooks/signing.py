"""The signature a receiver checks: `CommHub-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`,
the HMAC of "<t>.<raw body>" keyed with the subscription's secret (the scheme Stripe's webhooks
use): the timestamp is signed with the body, so a receiver that refuses old timestamps refuses
replays of a captured request."""

from __future__ import annotations

import hashlib
import hmac
import secrets

SIGNATURE_HEADER = "CommHub-Signature"
SECRET_PREFIX = "whsec_"
TOLERANCE_SECONDS = 300  # what README's receiver snippet accepts; signing itself never refuses


def secret_new() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature(*, secret: str, timestamp: int, body: bytes) -> str:
    """The header value for a body sent at `timestamp` (unix seconds)."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def signature_valid(*, secret: str, header: str, body: bytes, now: float, tolerance: int = TOLERANCE_SECONDS) -> bool:
    """What a receiver does (README has the same in ten lines): the v1 HMAC matches and the
    timestamp is recent. Used by the tests' receiver."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        sent = int(fields["t"])
    except (KeyError, ValueError):
        return False
    expected = signature(secret=secret, timestamp=sent, body=body).split("v1=", 1)[1]
    return abs(now - sent) <= tolerance and hmac.compare_digest(expected, fields.get("v1", ""))
