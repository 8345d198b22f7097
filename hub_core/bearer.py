"""`Authorization: Bearer <token>`: the one reader of the header, for every transport.

/mcp, /api and /events read the same header; each decides what a missing one means (an anonymous
MCP handshake, a dashboard session on /api, a refusal on /events), but they agree on what a
present one must look like and on the refusal's wording.
"""

from __future__ import annotations

from hub_core.errors import HubError

BEARER_HELP = 'Send the token as "Authorization: Bearer <ntok_…|utok_…>".'
WWW_AUTHENTICATE = 'Bearer realm="commhub"'  # the challenge sent with every 401


def says_bearer(authorization: str | None) -> bool:
    """True if the header names the Bearer scheme (with or without a token after it)."""
    scheme, _, _ = (authorization or "").partition(" ")
    return scheme.lower() == "bearer"


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; None when no header was sent.

    A header that is sent but is not a Bearer token raises HubError `unauthorized` (401).
    """
    if not authorization:
        return None
    _, _, token = authorization.partition(" ")
    if not says_bearer(authorization) or not token.strip():
        raise HubError("unauthorized", BEARER_HELP, status=401)
    return token.strip()
