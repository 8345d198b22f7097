"""ASGI entry point: HTTP (including SSE and long-poll) and the operators' websocket."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "commhub.settings")
http = get_asgi_application()  # first: it sets Django up before anything imports models

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from hub_core.body import whole_bodies  # noqa: E402
from hub_live.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        # Chunked bodies get their length before Django sizes them (hub_core.body).
        "http": whole_bodies(http),
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
