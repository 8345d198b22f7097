"""REST endpoints for budgets (hub_fleet.budgets), each running one of hub_tools.budget_tools' tools:
reading for anyone in the network, changes for its owners and admins."""

from __future__ import annotations

from hub_api.endpoints import Operation, route

urlpatterns = [
    route("budgets", Operation("get", "budget_list"), Operation("post", "budget_set"), tag="budgets"),
    route("budgets/<str:budget_id>/delete", Operation("post", "budget_delete"), tag="budgets"),
]
