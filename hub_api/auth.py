"""Who calls the API: a bearer token (agents, scripts) or a signed-in user (the dashboard)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from hub_agents.actors import Actor
from hub_agents.services import actor_for_user, token_authenticate
from hub_core.bearer import WWW_AUTHENTICATE, bearer_token, says_bearer
from hub_core.errors import HubError


class BearerTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer ntok_…|utok_…`; the request's `auth` is the token's Actor."""

    def authenticate(self, request: Request) -> tuple[Any, Actor] | None:
        header = request.headers.get("Authorization", "")
        if not says_bearer(header):
            return None  # another scheme, or none: the session authentication may know the caller
        try:
            actor = token_authenticate(raw=bearer_token(header) or "")
        except HubError as refusal:
            raise AuthenticationFailed(refusal.message) from None
        return AnonymousUser(), actor

    def authenticate_header(self, request: Request) -> str:
        return WWW_AUTHENTICATE


class HasActor(BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.auth, Actor) or bool(request.user and request.user.is_authenticated)


def actor_of(request: Request) -> Actor:
    if isinstance(request.auth, Actor):
        return request.auth
    return actor_for_user(request.user)


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = BearerTokenAuthentication
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "A CommHub token: ntok_… or utok_…"}
