"""Outbound webhooks as operations for REST (issue 24): list, create (the secret shown once), enable,
disable, delete, and a webhook's deliveries, for a network's owners and admins.

They are specs like the tools' (hub_tools.tool.Tool: one statement of each argument, parsed at the
door, writes counted against the write limit), through hub_webhooks' services and selectors, the
same the dashboard and the admin use (permissions, SSRF rules, audit). They are not MCP tools: an
agent's catalogue (tools/list) does not grow with an operator's chores, so they live apart from
hub_tools.tools.TOOLS, in WEBHOOK_TOOLS, which hub_api routes.
"""

from __future__ import annotations

import dataclasses
import re
from functools import partial
from typing import Any

from hub_agents.actors import Actor
from hub_core import validate
from hub_core.errors import invalid_argument
from hub_core.events import EventType
from hub_core.formats import timestamp
from hub_tools import args as A
from hub_tools import params as P
from hub_tools.params import Param
from hub_tools.schema import Schema, nullable, result
from hub_tools.tool import Tool
from hub_webhooks.models import Delivery, Subscription
from hub_webhooks.selectors import DELIVERIES_DEFAULT, DELIVERIES_SHOWN, webhook_history, webhook_list
from hub_webhooks.services import webhook_create, webhook_delete, webhook_set_active

URL_MAX = Subscription._meta.get_field("url").max_length
ID_MAX = 2**63 - 1  # the subscriptions' BigAutoField
# Characters no URL here may hold: white space (which urllib would drop or keep unnoticed) and NUL.
_NOT_IN_URL = validate.SPACE_CLASS + r"\u0000"
# The URL's shape, as the schema publishes it: http:// or https:// (any case), a host part without
# credentials (no "@" before the path), and no #fragment. A URL of this shape may still be refused
# (409): a port that is not a number, a host that does not resolve or resolves to an address
# webhooks may not reach (hub_webhooks.addresses).
URL_PATTERN = rf"^[Hh][Tt][Tt][Pp][Ss]?://[^/?#@{_NOT_IN_URL}]+([/?][^#{_NOT_IN_URL}]*)?$"
EVENT_TYPES = [str(kind) for kind in EventType]


def _url() -> Param:
    def parse(name: str, value: object) -> str:
        url = validate.required_text(name, value, max_len=URL_MAX)
        # Searched as JSON Schema validators search a pattern (a final newline passes "$"; the
        # service strips it), so whatever the schema admits gets past here.
        if not re.search(URL_PATTERN, url):
            raise invalid_argument(
                name, "must be an http:// or https:// URL with a host, without credentials, spaces or a #fragment"
            )
        return url

    published = {
        "type": "string",
        "description": "Where each event is POSTed, signed: http:// or https://, without credentials.",
        "minLength": 1,
        "maxLength": URL_MAX,
        "pattern": URL_PATTERN,
    }
    return Param(published, parse, required=True)


def _event_types() -> Param:
    def parse(name: str, value: object) -> list[str] | None:
        kinds = validate.string_list(name, value, max_items=len(EVENT_TYPES), max_len=validate.ID_MAX, unique=True)
        for index, kind in enumerate(kinds or []):
            validate.choice(f"{name}[{index}]", kind, EVENT_TYPES)
        return kinds

    published = {
        "type": "array",
        "description": "Only events of these types (left out or empty: every type, webhook_disabled included).",
        "maxItems": len(EVENT_TYPES),
        "uniqueItems": True,
        "items": {"type": "string", "enum": EVENT_TYPES},
    }
    return Param(published, parse)


WEBHOOK_ID = dataclasses.replace(
    P.whole("The webhook's id (webhook_id, from webhook_list or webhook_create).", low=1, high=ID_MAX), required=True
)


def _string(description: str = "") -> Schema:
    return {"type": "string", "description": description} if description else {"type": "string"}


def _moment(description: str) -> Schema:
    return {**nullable("string"), "format": "date-time", "description": description}


WEBHOOK: dict[str, Schema] = {
    "webhook_id": {"type": "integer"},
    "network_id": _string(),
    "url": _string(),
    "event_types": {
        "type": "array",
        "items": {"type": "string"},
        "description": "the event types sent; empty: every type",
    },
    "alias": {**nullable("string"), "description": "only events whose `to` holds it; null: every event"},
    "state": {"type": "string", "enum": Subscription.State.values},
    "disabled_reason": {**nullable("string"), "description": "why it is disabled; null while active"},
    "cursor": {"type": "integer", "description": "the last feed position delivered or passed over"},
    "attempts": {"type": "integer", "description": "failed attempts at the next event so far"},
    "next_attempt_at": _moment("when the next event is tried again after a failure; null: when due"),
    "failing_since": _moment("when the unbroken run of failures began; null while deliveries succeed"),
    "last_delivered_at": _moment("the last 2xx; null: none yet"),
    "created_by": _string(),
    "created_at": {"type": "string", "format": "date-time"},
}
WEBHOOK_OBJECT: Schema = {"type": "object", "properties": WEBHOOK, "required": list(WEBHOOK)}
DELIVERY: dict[str, Schema] = {
    "delivery_id": {"type": "integer"},
    "event_seq": {**nullable("integer"), "description": "the event's feed position; null: a test event"},
    "event_type": {"type": "string", "description": "empty for a note (skipped, disabled)"},
    "attempt": {"type": "integer"},
    "outcome": {"type": "string", "enum": Delivery.Outcome.values},
    "status_code": {**nullable("integer"), "description": "the receiver's HTTP status; null: no answer"},
    "error": {**nullable("string"), "description": "why it failed, or the note; null: none"},
    "response_excerpt": _string("the start of the receiver's answer"),
    "duration_ms": {"type": "integer"},
    "created_at": {"type": "string", "format": "date-time"},
}


def _required(schema: Schema, *names: str) -> Schema:
    """A result object whose success always holds these fields (besides ok)."""
    return {**schema, "required": ["ok", *names]}


def webhook_row(subscription: Subscription) -> dict[str, Any]:
    return {
        "webhook_id": subscription.pk,
        "network_id": subscription.network_id,
        "url": subscription.url,
        "event_types": list(subscription.event_types),
        "alias": subscription.alias or None,
        "state": subscription.state,
        "disabled_reason": subscription.disabled_reason or None,
        "cursor": subscription.cursor,
        "attempts": subscription.attempts,
        "next_attempt_at": timestamp(subscription.next_attempt_at),
        "failing_since": timestamp(subscription.failing_since),
        "last_delivered_at": timestamp(subscription.last_delivered_at),
        "created_by": subscription.created_by,
        "created_at": timestamp(subscription.created_at),
    }


def delivery_row(delivery: Delivery) -> dict[str, Any]:
    return {
        "delivery_id": delivery.pk,
        "event_seq": delivery.event_seq,
        "event_type": delivery.event_type,
        "attempt": delivery.attempt,
        "outcome": delivery.outcome,
        "status_code": delivery.status_code,
        "error": delivery.error or None,
        "response_excerpt": delivery.response_excerpt,
        "duration_ms": delivery.duration_ms,
        "created_at": timestamp(delivery.created_at),
    }


def _created(answer: tuple[Subscription, str]) -> dict[str, Any]:
    subscription, secret = answer
    return {**webhook_row(subscription), "secret": secret}


def _switch(*, actor: Actor, webhook_id: int, active: bool) -> Subscription:
    return webhook_set_active(actor=actor, subscription_id=webhook_id, active=active)


def _delete(*, actor: Actor, webhook_id: int) -> int:
    webhook_delete(actor=actor, subscription_id=webhook_id)
    return webhook_id


def _history(answer: tuple[Subscription, list[Delivery]]) -> dict[str, Any]:
    subscription, deliveries = answer
    return {"webhook": webhook_row(subscription), "deliveries": [delivery_row(row) for row in deliveries]}


def specs() -> list[Tool]:
    ADMINS = "For the network's owners and admins."
    return [
        Tool(
            name="webhook_list",
            title="List webhooks",
            description=(
                "The outbound webhooks of every network you administer (or of network_id), by network then "
                f"age: URL, filters, state, cursor and retry state; never their secrets. {ADMINS}"
            ),
            params={"network_id": A.NETWORK_ID},
            service=webhook_list,
            render=lambda found: {"webhooks": [webhook_row(subscription) for subscription in found]},
            output=_required(
                result(webhooks={"type": "array", "description": "by network, then age", "items": WEBHOOK_OBJECT}),
                "webhooks",
            ),
            read_only=True,
        ),
        Tool(
            name="webhook_create",
            title="Create a webhook",
            description=(
                "Have the network's events POSTed to url, signed with a new secret (whsec_…), which this answer "
                "shows once and nothing shows again. It is sent the events of the operators' feed from now on "
                "(not the log's history), only those of event_types and, with alias, those whose `to` holds it. "
                "A URL whose host resolves to a loopback, private or otherwise internal address is refused (409) "
                f"unless the hub allows them. At most 20 a network. Audited. {ADMINS}"
            ),
            params={
                "url": _url(),
                "event_types": _event_types(),
                "alias": P.identifier("Only events whose `to` holds this alias (left out: every event)."),
                "network_id": A.NETWORK_ID,
            },
            service=webhook_create,
            render=_created,
            output=_required(
                result(
                    **WEBHOOK,
                    secret={
                        "type": "string",
                        "pattern": "^whsec_",
                        "description": "the signing secret: keep it, it is never shown again",
                    },
                ),
                *WEBHOOK,
                "secret",
            ),
        ),
        Tool(
            name="webhook_enable",
            title="Enable a webhook",
            description=(
                "Switch a webhook on: it resumes from its cursor, retry state cleared (events the log pruned "
                "meanwhile are noted as skipped among its deliveries). Its URL is checked again first (409 if "
                f"its address may no longer be reached). Already on: nothing changes. Audited. {ADMINS}"
            ),
            params={"webhook_id": WEBHOOK_ID},
            service=partial(_switch, active=True),
            render=webhook_row,
            output=_required(result(**WEBHOOK), *WEBHOOK),
            idempotent=True,
        ),
        Tool(
            name="webhook_disable",
            title="Disable a webhook",
            description=(
                "Switch a webhook off: nothing is sent until it is enabled again; events wait in the log (for "
                f"its retention). Already off: nothing changes. Audited. {ADMINS}"
            ),
            params={"webhook_id": WEBHOOK_ID},
            service=partial(_switch, active=False),
            render=webhook_row,
            output=_required(result(**WEBHOOK), *WEBHOOK),
            idempotent=True,
        ),
        Tool(
            name="webhook_delete",
            title="Delete a webhook",
            description=f"Delete a webhook and its deliveries; a deliverer sending to it stops. Audited. {ADMINS}",
            params={"webhook_id": WEBHOOK_ID},
            service=_delete,
            render=lambda webhook_id: {"webhook_id": webhook_id, "deleted": True},
            output=_required(
                result(webhook_id={"type": "integer"}, deleted={"type": "boolean", "enum": [True]}),
                "webhook_id",
                "deleted",
            ),
            destructive=True,
        ),
        Tool(
            name="webhook_deliveries",
            title="A webhook's deliveries",
            description=(
                "A webhook and its latest delivery attempts, newest first: each event's attempt, outcome "
                "(delivered, failed, refused) with the HTTP status or error, the start of the answer and the time "
                f"taken, and notes (skipped: events the log pruned first; disabled: why it was switched off). {ADMINS}"
            ),
            params={
                "webhook_id": WEBHOOK_ID,
                "limit": A.limit("deliveries", DELIVERIES_SHOWN, DELIVERIES_DEFAULT),
            },
            service=webhook_history,
            render=_history,
            output=_required(
                result(
                    webhook=WEBHOOK_OBJECT,
                    deliveries={
                        "type": "array",
                        "description": "newest first",
                        "items": {"type": "object", "properties": DELIVERY, "required": list(DELIVERY)},
                    },
                ),
                "webhook",
                "deliveries",
            ),
            read_only=True,
        ),
    ]


WEBHOOK_TOOLS: dict[str, Tool] = {tool.name: tool for tool in specs()}
