"""{% live_routes %}: each event type's dashboard regions (declared by the apps that publish them),
as JSON for the page's script (body[data-live-routes]), so it routes on declarations, not on type
names."""

from __future__ import annotations

import json
from functools import cache

from django import template

from hub_core.events import event_routes

register = template.Library()


@register.simple_tag
@cache
def live_routes() -> str:
    return json.dumps(event_routes(), separators=(",", ":"))
