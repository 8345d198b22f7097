"""ASGI entry point: HTTP (including SSE and long-poll) and the operators' websocket."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

from commhub import tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "commhub.settings")
tracing.configure()  # off unless OTEL_* say so; before Django's handler is built (its instrumentation is a middleware)
http = get_asgi_application()  # first: it sets Django up before anything imports models

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from commhub import hot  # noqa: E402
from commhub.lean import Receive, Scope, Send, is_lean, lean_app  # noqa: E402
from commhub.logs import with_request_context  # noqa: E402
from commhub.metrics import requests_counted  # noqa: E402
from hub_core.body import whole_bodies  # noqa: E402
from hub_live.routing import websocket_urlpatterns  # noqa: E402

# Traces on: agents' calls get their server span here, as Django's middleware never sees them.
# On PostgreSQL, get_inbox over POST /mcp is answered on the event loop (commhub.hot), the rest as lean.
lean = tracing.server_spans(hot.hot_app if hot.enabled() else lean_app)


async def http_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Agents' calls (/mcp, REST with a bearer token) ahead of Django's handler and middleware
    (commhub.lean says why and what it keeps); everything else through Django."""
    await (lean if is_lean(scope) else http)(scope, receive, send)


# Outermost: every request and connection (lean or not, SSE, websockets) gets its request id and
# log context before anything can log (commhub.logs).
application = with_request_context(
    ProtocolTypeRouter(
        {
            # Chunked bodies get their length before Django sizes them (hub_core.body); every request
            # is counted (commhub.metrics), agents' calls served by commhub.lean included.
            "http": requests_counted(whole_bodies(http_app)),
            "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        }
    )
)
