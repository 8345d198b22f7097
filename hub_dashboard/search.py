"""The dashboard's search page: the `search` tool through the registry (the same parsing and
scope as MCP and REST), its snippets shown with their highlights."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from hub_core.errors import HubError
from hub_dashboard.views import Desk
from hub_search.selectors import MARK_CLOSE, MARK_OPEN
from hub_search.sources import KINDS
from hub_tools.tools import invoke

SHOWN = 50


@login_required
def search_page(request: HttpRequest) -> HttpResponse:
    desk = Desk(request)
    if desk.network_id is None:
        return render(request, "dashboard/no_network.html", desk.context())
    query = request.GET.get("q", "").strip()
    kind = request.GET.get("kind", "")
    context: dict[str, Any] = {
        "query": query,
        "search_query": query,
        "kind": kind,
        "kinds": KINDS,
        "section": "search",
        "results": [],
    }
    if query:
        arguments = {"query": query, "network_id": desk.network_id, "limit": SHOWN}
        if kind:
            arguments["kinds"] = kind
        try:
            found = invoke("search", desk.actor, arguments)
        except HubError as refusal:
            context["error"] = refusal.message
        else:
            context["results"] = [{**row, "snippet_html": highlighted(row["snippet"])} for row in found]
    return render(request, "dashboard/search.html", desk.context(**context), status=400 if "error" in context else 200)


def highlighted(snippet: str) -> SafeString:
    """The snippet as HTML: all of it escaped, then its markers (which the text itself never holds:
    hub_search.selectors shows the text's own as other characters) made <mark> elements."""
    return mark_safe(escape(snippet).replace(MARK_OPEN, "<mark>").replace(MARK_CLOSE, "</mark>"))
