"""A2A v1.0 agent cards: the hub's, each network's and each agent's, as JSON.

- `GET /.well-known/agent-card.json`: the hub. Public: it names no network and no agent, only
  what the hub is, where its endpoints are and how to authenticate. Its skills are the tools.
- `GET /api/v1/networks/{network_id}/agent-card.json`: a network, its skills the union of what
  its agents reported (report_status `skills`). Any token or login that may read the network.
- `GET /api/v1/networks/{network_id}/agents/{alias}/agent-card.json`: one agent, from its session.

A card is the spec's `AgentCard` in its proto JSON form (camelCase; tests parse each one strictly
with a2a-sdk's types). The hub builds it as plain JSON: a2a-sdk is a test dependency only.

CommHub speaks MCP and its own REST API, not A2A's operations (SendMessage, ...). So its interfaces
are declared with custom protocol bindings, URIs naming what is spoken there, as the spec asks for
bindings beyond its own three: never "JSONRPC" or "HTTP+JSON", which an A2A client would take for
A2A endpoints and call in vain. In network and agent cards each interface carries the network as
its `tenant`: the `network_id` argument every tool takes.

Every card is signed (A2A 8.4): `signatures` holds one JWS (RFC 7515) by the hub's key
(hub_agents.signing, ES256) over the card without its `signatures`, emptied of empty strings,
lists and objects and canonicalized by RFC 8785 (JCS), the payload left out (RFC 7515 appendix F).
That is what a2a-sdk's verifier (a2a.utils.signing) checks, and a2a-js alike. (The spec's text
keeps REQUIRED fields that are empty, where both SDKs drop them; no card of ours has one, so the two
readings differ here only on `securityRequirements`, whose one scheme lists no scopes.) The
protected header's `jku` is the key set, `GET /.well-known/jwks.json`, public like the hub's card.

Network and agent cards state the network's identity policy as an extension (`IDENTITY_EXTENSION`),
and an agent card whether a live token is bound to its alias (hub_agents.identity).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

import rfc8785
from django.conf import settings
from django.urls import path, reverse
from django.utils.http import parse_etags
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from hub_agents.results import Row
from hub_agents.roster import Roster, alias_bound, network_roster
from hub_agents.signing import detached_signature, public_key_set
from hub_api.auth import actor_of
from hub_core import validate
from hub_tasks.models import POOL
from hub_tools.tools import TOOLS

Card = dict[str, Any]

A2A_VERSION = "1.0"  # the A2A protocol version these cards are written to
# MCP's Streamable HTTP transport, as the version that introduced it defines it; the MCP handshake
# negotiates which protocol version a client then speaks.
MCP_BINDING = "https://modelcontextprotocol.io/specification/2025-03-26/basic/transports#streamable-http"
BEARER = "bearer"  # the key of the one security scheme
# Skills' ids are tags (hub_agents.limits.SKILL_PATTERN: no colon) or tool names: this one is neither.
ANY_TASK = "commhub:tasks"
# Who may act as an agent of the network (hub_agents.identity): an identifier, not a document.
IDENTITY_EXTENSION = "urn:commhub:a2a:identity:v1"
# Cards name no secret, but network and agent cards are for members only: never kept by a cache.
PRIVATE = {"Cache-Control": "no-store"}
HUB_CARD_MAX_AGE = 300  # the hub's card changes only with a deployment
KEYS_MAX_AGE = 300  # the key set changes only if an operator replaces the key


# --- the cards -----------------------------------------------------------------------------------


def hub_card(request: Request) -> Card:
    return {
        "name": "CommHub",
        "description": (
            "A hub for a fleet of AI coding agents: they report their status, send and take tasks and "
            "messages, and report completions, over MCP (/mcp) or REST (/api/v1/), with a bearer token. "
            "Each network has its own card at /api/v1/networks/{network_id}/agent-card.json, and each agent "
            "at /api/v1/networks/{network_id}/agents/{alias}/agent-card.json (a token of that network). Every "
            "card is signed by the hub (ES256); its keys are at /.well-known/jwks.json."
        ),
        **_common(request, tenant=None, security=_security("A CommHub token: ntok_… (network) or utok_… (user).")),
        "defaultInputModes": ["application/json"],
        "defaultOutputModes": ["application/json"],
        "skills": [
            {
                "id": tool.name,
                "name": tool.title,
                "description": tool.description,
                "tags": ["read" if tool.read_only else "write", *(["destructive"] if tool.destructive else [])],
            }
            for tool in TOOLS
        ],
    }


def network_card(request: Request, roster: Roster) -> Card:
    statuses = Counter(row["status"] for row in roster.sessions)
    reported = ", ".join(f"{count} {status}" for status, count in sorted(statuses.items()))
    offering: dict[str, list[str]] = {}
    for row in roster.sessions:
        for tag in row["skills"]:
            offering.setdefault(tag, []).append(f"{row['alias']} ({row['status']})")
    skills = [
        {"id": tag, "name": tag, "description": f"Offered by {', '.join(offering[tag])}.", "tags": [tag]}
        for tag in sorted(offering)
    ]
    return {
        "name": roster.name,
        "description": (
            f"The agents of CommHub network {roster.name} ({roster.network_id}). Send one a task by its "
            f'alias (send_task), or send it to alias "{POOL}" with required_skills: any agent whose skills '
            f"cover them may claim it. Agents: {len(roster.sessions)}" + (f" ({reported})." if reported else ".")
        ),
        **_common(
            request,
            tenant=roster.network_id,
            security=_member_security(roster),
            extensions=[_identity(roster, {})],
        ),
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": skills or [_any_task("No agent here has reported skills yet; each takes tasks sent to its alias.")],
    }


def agent_card(request: Request, roster: Roster, *, bound: bool) -> Card:
    """`bound`: whether a live token of the network is bound to the agent's alias (roster.alias_bound)."""
    (row,) = roster.sessions
    alias = row["alias"]
    skills = [
        {
            "id": tag,
            "name": tag,
            "description": f'{alias} reported it can do this. Send it a task: send_task with alias "{alias}".',
            "tags": [tag],
        }
        for tag in row["skills"]
    ]
    return {
        "name": alias,
        "description": _agent_description(row, roster),
        **_common(
            request,
            tenant=roster.network_id,
            security=_member_security(roster),
            extensions=[_identity(roster, {"alias": alias, "bound": bound})],
        ),
        "version": row["version"] or "unreported",
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": skills or [_any_task(f"{alias} has reported no skills; it takes tasks sent to its alias.")],
    }


def _agent_description(row: Row, roster: Roster) -> str:
    kind = f"A {row['agent']} agent" if row["agent"] else "An agent"
    details = [f"model {row['model']}"] if row["model"] else []
    details += [f"version {row['version']}"] if row["version"] else []
    said = f" ({', '.join(details)})" if details else ""
    return (
        f"{kind}{said} in CommHub network {roster.name} ({roster.network_id}), as it last reported: "
        f"{row['status']}, last seen {row['last_seen_at']}. Reach it through the hub: send_task or "
        f'send_message with alias "{row["alias"]}".'
    )


def _any_task(description: str) -> Card:
    return {"id": ANY_TASK, "name": "Tasks", "description": description, "tags": ["tasks"]}


def _identity(roster: Roster, params: Card) -> Card:
    return {
        "uri": IDENTITY_EXTENSION,
        "description": (
            "Who may act as an agent of this network: in a strict one only a token bound to its alias, in an "
            "open one any member's token too. params: network, policy (open or strict); on an agent's card "
            "its alias, and bound: whether a live token of the network that may act as an agent is bound to it."
        ),
        "params": {"network": roster.network_id, "policy": roster.identity_policy, **params},
    }


def _common(request: Request, *, tenant: str | None, security: Card, extensions: list[Card] | None = None) -> Card:
    """What every card shares: where the hub is, how to authenticate, what it can do."""
    schema = reverse("schema")
    interfaces = [
        {"url": request.build_absolute_uri(reverse("mcp")), "protocolBinding": MCP_BINDING},
        # /api/v1/ (the schema is served at its root), whose binding is its own OpenAPI description.
        {
            "url": request.build_absolute_uri(schema.removesuffix("schema")),
            "protocolBinding": request.build_absolute_uri(schema),
        },
    ]
    return {
        "supportedInterfaces": [
            {**interface, **({"tenant": tenant} if tenant else {}), "protocolVersion": A2A_VERSION}
            for interface in interfaces
        ],
        "version": settings.SPECTACULAR_SETTINGS["VERSION"],  # the API's version, as /api/v1/schema states it
        "documentationUrl": request.build_absolute_uri(reverse("docs")),
        # Streaming: SSE (an MCP long-poll's progress, /events/{alias}); the hub pushes to no client URL.
        "capabilities": {
            "streaming": True,
            "pushNotifications": False,
            **({"extensions": extensions} if extensions else {}),
        },
        **security,
    }


def _security(description: str) -> Card:
    return {
        "securitySchemes": {
            BEARER: {
                "httpAuthSecurityScheme": {
                    "scheme": "Bearer",
                    "bearerFormat": "ntok_… or utok_…",
                    "description": description,
                }
            }
        },
        "securityRequirements": [{"schemes": {BEARER: {"list": []}}}],
    }


def _member_security(roster: Roster) -> Card:
    return _security(
        f"A CommHub token that may read network {roster.network_id}: its network token (ntok_…), or the "
        "user token (utok_…) of one of its members."
    )


# --- the signature -------------------------------------------------------------------------------


def signed(request: Request, card: Card) -> Card:
    """The card with its signature (A2A 8.4), whose key is in the key set at the protected `jku`."""
    payload = rfc8785.dumps(_pruned(card))
    jku = request.build_absolute_uri(reverse("jwks"))
    return {**card, "signatures": [detached_signature(payload, jku=jku)]}


def _pruned(value: Any) -> Any:
    """`value` without its empty strings, lists and objects, at every depth (None: all of it was
    empty), as a2a-sdk prunes a card it verifies. Not false or 0: those are kept, as it keeps them."""
    if isinstance(value, dict):
        kept = {key: item for key, item in ((key, _pruned(item)) for key, item in value.items()) if item is not None}
        return kept or None
    if isinstance(value, list):
        kept_items = [item for item in map(_pruned, value) if item is not None]
        return kept_items or None
    return None if value == "" else value


def _etag(card: Card) -> str:
    # Over what the card says and who signed it, not over the signature: ES256 signs anew each time,
    # and two signings of one card by one key are the same card (a2a-sdk's card route does alike).
    said = {**card, "signatures": [signature["protected"] for signature in card["signatures"]]}
    return f'W/"{hashlib.sha256(json.dumps(said, sort_keys=True).encode()).hexdigest()}"'


# --- the views -----------------------------------------------------------------------------------

# Not in the OpenAPI description (/api/v1/schema): that describes the tools over REST, and a card's
# shape is the A2A spec's, which clients read from it and not from us.


class HubCardView(APIView):
    authentication_classes = ()
    permission_classes = (AllowAny,)

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        card = signed(request, hub_card(request))
        etag = _etag(card)
        headers = {"ETag": etag, "Cache-Control": f"public, max-age={HUB_CARD_MAX_AGE}"}
        asked = parse_etags(request.headers.get("If-None-Match", ""))
        if "*" in asked or etag.removeprefix("W/") in {tag.removeprefix("W/") for tag in asked}:
            return Response(status=304, headers=headers)
        return Response(card, headers=headers)


class NetworkCardView(APIView):
    @extend_schema(exclude=True)
    def get(self, request: Request, network_id: str) -> Response:
        roster = network_roster(actor=actor_of(request), network_id=network_id)
        return Response(signed(request, network_card(request, roster)), headers=PRIVATE)


class AgentCardView(APIView):
    @extend_schema(exclude=True)
    def get(self, request: Request, network_id: str, alias: str) -> Response:
        alias = validate.required_identifier("alias", alias)
        roster = network_roster(actor=actor_of(request), network_id=network_id, alias=alias)
        bound = alias_bound(network_id=roster.network_id, alias=alias)
        return Response(signed(request, agent_card(request, roster, bound=bound)), headers=PRIVATE)


class KeySetRenderer(JSONRenderer):
    media_type = "application/jwk-set+json"  # RFC 7517's; application/json to a client that asks for it


class KeySetView(APIView):
    """The public keys the cards' signatures are checked with (their `jku`): public and cacheable."""

    authentication_classes = ()
    permission_classes = (AllowAny,)
    renderer_classes = (KeySetRenderer, JSONRenderer)

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        return Response(public_key_set(), headers={"Cache-Control": f"public, max-age={KEYS_MAX_AGE}"})


hub_card_view = HubCardView.as_view()
key_set_view = KeySetView.as_view()

urlpatterns = [
    path("networks/<str:network_id>/agent-card.json", NetworkCardView.as_view(), name="network_agent_card"),
    path(
        "networks/<str:network_id>/agents/<str:alias>/agent-card.json",
        AgentCardView.as_view(),
        name="agent_agent_card",
    ),
]
