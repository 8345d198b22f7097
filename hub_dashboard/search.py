"""The dashboard's search page: the `search` tool's selector (the same query syntax and network
scope as MCP and REST; as an operator, every channel's posts), its snippets shown with their
highlights."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from hub_core.errors import HubError
from hub_dashboard.views import Desk
from hub_search.selectors import MARK_CLOSE, MARK_OPEN, search_run
from hub_search.sources import KINDS
from hub_tools.tools import TOOLS_BY_NAME

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
        try:
            given = TOOLS_BY_NAME["search"].params  # the tool's own parsing of what a person typed
            found = search_run(
                actor=desk.actor,
                query=given["query"].parse("query", query),
                kinds=given["kinds"].parse("kinds", kind or None),
                network_id=desk.network_id,
                limit=SHOWN,
                watching=True,  # operators watch every channel, as they watch every inbox
            )
        except HubError as refusal:
            context["error"] = refusal.message
        else:
            context["results"] = [
                {**row, "snippet_html": highlighted(row["snippet"]), "href": _href(row)} for row in found
            ]
    return render(request, "dashboard/search.html", desk.context(**context), status=400 if "error" in context else 200)


def _href(row: dict[str, Any]) -> str | None:
    """Where a hit is read in full: a task's page, a post in its channel's page."""
    if row["kind"] == "task":
        return reverse("dashboard:task", args=[row["id"]])
    if row["kind"] == "post":
        channel_id, seq = row["id"].split("#")
        return f"{reverse('dashboard:channel', kwargs={'channel_id': channel_id})}#post-{seq}"
    return None


def highlighted(snippet: str) -> SafeString:
    """The snippet as HTML: all of it escaped, then its markers (which the text itself never holds:
    hub_search.selectors shows the text's own as other characters) made <mark> elements."""
    return mark_safe(escape(snippet).replace(MARK_OPEN, "<mark>").replace(MARK_CLOSE, "</mark>"))
