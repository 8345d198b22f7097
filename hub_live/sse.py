"""GET /events/{alias}: an agent's events as Server-Sent Events, replayed from the log on reconnect."""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.http import require_GET

from hub_agents import identity
from hub_agents.actors import Actor
from hub_agents.services import session_touch, token_authenticate
from hub_core import tracing, validate
from hub_core.bearer import BEARER_HELP, WWW_AUTHENTICATE, bearer_token
from hub_core.errors import HubError
from hub_core.metrics import OPEN_STREAMS
from hub_core.waiting import in_pool
from hub_events.selectors import events_position
from hub_live import fanout
from hub_tasks.models import DeliveredVia


@require_GET
async def event_stream(request: HttpRequest, alias: str) -> HttpResponse:
    try:
        token, network_id, after, present = await in_pool(lambda: _open(request, alias))
    except HubError as refusal:
        return _refused(refusal)
    response = StreamingHttpResponse(
        _frames(token, network_id, alias, after, present=present), content_type="text/event-stream"
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # proxies must pass each frame on at once
    return response


def _refused(refusal: HubError) -> JsonResponse:
    """A stream refused before it starts, in REST's words: `error` is the machine code."""
    reply = JsonResponse({"ok": False, "error": refusal.code, "message": refusal.message}, status=refusal.status)
    if refusal.status == 401:
        reply["WWW-Authenticate"] = WWW_AUTHENTICATE
    return reply


def _open(request: HttpRequest, alias: str) -> tuple[str, str, int, bool]:
    """Who may listen (their token), to which network's feed, from which position, and whether
    their connection counts as the alias's presence (only callers that may write there)."""
    token = bearer_token(request.headers.get("Authorization"))
    if token is None:
        raise HubError("unauthorized", BEARER_HELP, status=401)
    actor: Actor = token_authenticate(raw=token)
    alias = validate.required_identifier("alias", alias)
    networks = actor.readable_networks(validate.identifier("network_id", request.GET.get("network_id")))
    if len(networks) != 1:
        raise HubError("network_required", "You belong to several networks; pass ?network_id=.", status=400)
    (network_id,) = networks
    identity.speak_as(actor, network_id, alias)  # an agent's stream is its inbox: only for whoever may be it
    present = actor.can_write(network_id)
    last = request.headers.get("Last-Event-ID") or request.GET.get("last_event_id")
    if last is None:
        return token, network_id, events_position(network_id=network_id), present  # only what comes next
    if not re.fullmatch(r"[0-9]{1,18}", last):
        raise validate.invalid_argument("Last-Event-ID", f"must be an event id from this stream (got {last!r})")
    return token, network_id, int(last), present


async def _frames(token: str, network_id: str, alias: str, after: int, *, present: bool) -> AsyncIterator[str]:
    every = float(settings.COMMHUB_STREAM_RECHECK_SECONDS)
    # Counted while the response streams: closing it (the client left, the server stops, the caller
    # lost its right) ends the generator, and the finally with it.
    OPEN_STREAMS.labels(transport="sse").inc()
    try:
        # Joined (subscribed) before the first read, so nothing can slip between the read and the
        # subscription. The process's reader of the network reads the log for all its streams and
        # writes the receipts of what reaches the agent's own stream (hub_live.fanout).
        stream = await fanout.join(
            network_id=network_id, audience=alias, after=after, receipts=DeliveredVia.SSE if present else None
        )
        try:
            if present:
                await in_pool(lambda: session_touch(network_id=network_id, alias=alias))
            yield "retry: 2000\n\n"
            # A fixed deadline, not a wait that each event restarts: a stream that is never quiet for
            # long must lose its right to exist on time too.
            next_check = time.monotonic() + every
            while True:
                if time.monotonic() >= next_check:
                    next_check = time.monotonic() + every
                    if not await in_pool(lambda: _keepalive(token, network_id, alias)):
                        return  # revoked, deactivated, or no longer a reader of the network: the stream ends
                    yield ": keepalive\n\n"
                for frame, trace in await stream.next(next_check - time.monotonic()):
                    # With traces on, a span in the trace that published the event (hub_core.tracing).
                    with tracing.delivery(frame["type"], frame["id"], trace, alias):
                        yield _sse(frame)
        finally:
            fanout.leave(stream)
    finally:
        OPEN_STREAMS.labels(transport="sse").dec()


def _keepalive(token: str, network_id: str, alias: str) -> bool:
    """False if the caller may no longer read the network or be the alias (by the read path's own
    rules: a policy switched to strict ends an unbound token's stream); else: a connected caller
    that may write there keeps the alias alive. (Events left unsealed by a process that died after
    its commit are sealed by the stream's reader, hub_live.fanout.)"""
    try:
        actor = token_authenticate(raw=token)
        actor.readable_networks(network_id)
        identity.speak_as(actor, network_id, alias)
    except HubError:
        return False
    if actor.can_write(network_id):  # a viewer watching must not keep an agent "online"
        session_touch(network_id=network_id, alias=alias)
    return True


def _sse(frame: dict[str, Any]) -> str:
    return f"id: {frame['id']}\nevent: {frame['type']}\ndata: {json.dumps(frame, ensure_ascii=True)}\n\n"
