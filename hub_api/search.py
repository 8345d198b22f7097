"""REST endpoints for the search tools (issue 18), each running one tool."""

from __future__ import annotations

from hub_api.endpoints import Operation, route

urlpatterns = [route("search", Operation("get", "search"), tag="search")]
