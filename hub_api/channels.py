"""REST endpoints for the channels tools (issue 18), each running one tool."""

from __future__ import annotations

from hub_api.endpoints import Operation, route

urlpatterns = [
    route(
        "channels",
        Operation("get", "channel_list"),
        Operation("post", "channel_create", created=True),
        tag="channels",
    ),
    route("channels/<str:channel_id>", Operation("get", "channel_info"), tag="channels"),
    route("channels/<str:channel_id>/join", Operation("post", "channel_join"), tag="channels"),
    route("channels/<str:channel_id>/leave", Operation("post", "channel_leave"), tag="channels"),
    route("channels/<str:channel_id>/configure", Operation("post", "channel_configure"), tag="channels"),
    route(
        "channels/<str:channel_id>/posts",
        Operation("get", "channel_read"),
        Operation("post", "channel_post", created=True),
        tag="channels",
    ),
]
