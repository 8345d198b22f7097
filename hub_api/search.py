"""REST endpoints for the search tools (issue 18), each running one tool."""

from __future__ import annotations

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
