"""The front checks of an agent's call and the headers of its answer, remembered by what they read.

Every answer on the lean path passes the host check (ALLOWED_HOSTS), SecurityMiddleware (the HTTPS
redirect, HSTS and the other security headers), the /mcp origin check, X-Frame-Options and the
content security policy (commhub.lean). Run through Django's objects they cost a tenth of a
get_inbox (an ASGIRequest, its header map, a JsonResponse and its header dict), yet they read only
a handful of the request's inputs and the settings, and the headers they add to a JSON answer do
not depend on what it says. So the fast lane (commhub.hot) runs them for real once per distinct
set of those inputs, through the middlewares' own methods, and remembers the outcome: the headers
of a JSON answer in the order Django sends them (without content-length), or None where the
ordinary path must answer (a host refused, a redirect, an origin refused).

What they read: the scheme, server and path of the scope, and the request's Host, Origin,
X-Forwarded-Host, X-Forwarded-Port and the proxy's HTTPS header (SECURE_PROXY_SSL_HEADER). Settings
that change (the tests' overrides) empty the memory; it holds at most MEMORY entries (a client
cannot grow it without bound by sending Host values: past that it starts again).
"""

from __future__ import annotations

import io
from typing import Any

from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import JsonResponse
from django.middleware.security import SecurityMiddleware

from commhub.lean import Scope, dressed, header_list, not_called
from hub_mcp import views

MEMORY = 256
_read = frozenset({b"host", b"origin", b"x-forwarded-host", b"x-forwarded-port", b"x-forwarded-proto"})
_known: dict[tuple[Any, ...], list[tuple[bytes, bytes]] | None] = {}


@receiver(setting_changed)
def _forget(**kwargs: Any) -> None:
    global _read
    _known.clear()
    proxy = settings.SECURE_PROXY_SSL_HEADER
    extra = {proxy[0].removeprefix("HTTP_").lower().replace("_", "-").encode("latin-1")} if proxy else set()
    _read = frozenset({b"host", b"origin", b"x-forwarded-host", b"x-forwarded-port", b"x-forwarded-proto", *extra})


_forget()


def json_headers(scope: Scope) -> list[tuple[bytes, bytes]] | None:
    """The headers of a JSON answer to this /mcp request, or None if the ordinary path must answer."""
    server = scope.get("server")
    key = (  # servers may give lists where ASGI says tuples (daphne does)
        scope.get("scheme"),
        None if server is None else tuple(server),
        scope["path"],
        *((name, value) for name, value in scope["headers"] if name in _read),
    )
    try:
        return _known[key]
    except KeyError:
        pass
    if len(_known) >= MEMORY:
        _known.clear()
    headers = _known[key] = _checked(scope)
    return headers


def _checked(scope: Scope) -> list[tuple[bytes, bytes]] | None:
    request = ASGIRequest(scope, io.BytesIO(b""))
    security = SecurityMiddleware(not_called)
    try:
        request.get_host()
    except Exception:
        return None
    if security.process_request(request) is not None or not views._origin_allowed(request.headers.get("Origin")):
        return None
    return header_list(dressed(request, JsonResponse({}), security))
