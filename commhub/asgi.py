"""ASGI entry point: HTTP (including SSE and long-poll) and the operators' websocket."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "commhub.settings")
http = get_asgi_application()  # first: it sets Django up before anything imports models

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from commhub.lean import Receive, Scope, Send, is_lean, lean_app  # noqa: E402
from hub_core.body import whole_bodies  # noqa: E402
from hub_live.routing import websocket_urlpatterns  # noqa: E402


async def http_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Agents' calls (/mcp, REST with a bearer token) ahead of Django's handler and middleware
    (commhub.lean says why and what it keeps); everything else through Django."""
    await (lean_app if is_lean(scope) else http)(scope, receive, send)


application = ProtocolTypeRouter(
    {
        # Chunked bodies get their length before Django sizes them (hub_core.body).
        "http": whole_bodies(http_app),
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
