"""REST endpoints for concurrency caps (hub_fleet.caps), each running one of hub_tools.cap_tools'
tools: reading for anyone in the network, changes for its owners and admins."""

from __future__ import annotations

from hub_api.endpoints import Operation, route

urlpatterns = [
    route("caps", Operation("get", "cap_list"), Operation("post", "cap_set"), tag="caps"),
    route("caps/<str:cap_id>/delete", Operation("post", "cap_delete"), tag="caps"),
]
