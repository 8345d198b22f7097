"""The content security policy every response carries, whichever app serves it (Django's
middleware in commhub.security, the agents' lean path in commhub.lean)."""

from __future__ import annotations

from django.http import HttpResponseBase

# Pages load scripts only from this origin, never inline, and cannot be framed. Styles may be
# inline (progress bars set a width); that lets no script run.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


def with_content_security_policy(response: HttpResponseBase) -> HttpResponseBase:
    response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    return response
