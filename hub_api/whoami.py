"""`GET /api/v1/whoami`: who the caller's token is, so a client can check its setup before it acts.

A node (commhub-agent node) asks it at start and on each reload: a token bound to aliases serves only
the agents its binding covers, and an unbound token serves none in a strict network. Not a tool: it
names no network and no alias, every token may ask it of itself, and MCP clients have no use for it.
"""

from __future__ import annotations

from typing import Any

from django.urls import path
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from hub_agents.models import IdentityPolicy, Role
from hub_agents.selectors import token_identity
from hub_api.auth import actor_of
from hub_api.endpoints import ERROR_SCHEMA, ERRORS
from hub_core.errors import invalid_argument

IDENTITY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean", "enum": [True]},
        "label": {"type": "string", "description": 'How the hub names the caller, e.g. "ntok_AbCd1234 (node-a)".'},
        "kind": {
            "type": "string",
            "enum": ["network", "user", "session"],
            "description": "network: a network token (ntok_…); user: a user token (utok_…); session: a signed-in "
            "user (the dashboard).",
        },
        "names": {
            "type": "array",
            "items": {"type": "string"},
            "description": "What the caller is called when it acts as itself (its from_session as an unbound token "
            "in a strict network).",
        },
        "aliases": {
            "type": "array",
            "items": {"type": "string"},
            "description": 'The aliases the token acts as, each an alias or a pattern such as "build-*"; empty: '
            "unbound (any alias in an open network, none in a strict one).",
        },
        "networks": {
            "type": "array",
            "description": "The caller's networks, by name.",
            "items": {
                "type": "object",
                "properties": {
                    "network_id": {"type": "string"},
                    "name": {"type": "string"},
                    "role": {"type": "string", "enum": list(Role.values)},
                    "identity_policy": {
                        "type": "string",
                        "enum": list(IdentityPolicy.values),
                        "description": "open: any member token may act as any agent; strict: only a token bound "
                        "to an alias acts as it.",
                    },
                },
                "required": ["network_id", "name", "role", "identity_policy"],
            },
        },
    },
    "required": ["ok", "label", "kind", "names", "aliases", "networks"],
}


class WhoamiView(APIView):
    @extend_schema(
        operation_id="whoami",
        summary="Who this token is",
        description="The caller's token: its label and kind, the aliases it is bound to, and each of its networks "
        "with its role and identity policy. A client checks with it that its token may act as the agents it "
        "means to run.",
        tags=["identity"],
        responses={
            200: OpenApiResponse(response=IDENTITY_SCHEMA, description="The caller's identity."),
            **{status: OpenApiResponse(response=ERROR_SCHEMA, description=text) for status, text in ERRORS.items()},
        },
    )
    def get(self, request: Request) -> Response:
        for name in request.query_params:
            raise invalid_argument(name, "is not an argument: whoami takes none")
        return Response({"ok": True, **token_identity(actor=actor_of(request))}, headers={"Cache-Control": "no-store"})


urlpatterns = [path("whoami", WhoamiView.as_view(), name="whoami")]
