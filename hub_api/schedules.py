"""REST endpoints for recurring schedules (hub_schedules), each running one of
hub_tools.schedule_tools' tools: reading for anyone in the network, changes for its owners and admins."""

from __future__ import annotations

from hub_api.endpoints import Operation, route

urlpatterns = [
    route(
        "schedules",
        Operation("get", "schedule_list"),
        Operation("post", "schedule_create", created=True, repeatable=False),
        tag="schedules",
    ),
    route("schedules/<str:schedule_id>/pause", Operation("post", "schedule_pause"), tag="schedules"),
    route("schedules/<str:schedule_id>/resume", Operation("post", "schedule_resume"), tag="schedules"),
    route("schedules/<str:schedule_id>/run", Operation("post", "schedule_run_now"), tag="schedules"),
    route("schedules/<str:schedule_id>/delete", Operation("post", "schedule_delete"), tag="schedules"),
]
