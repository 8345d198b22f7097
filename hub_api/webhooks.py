"""REST endpoints for outbound webhooks (issue 24), for a network's owners and admins, each running
one of hub_tools.webhook_tools' operations (not MCP tools). The answer that shows a new webhook's
secret is never cached."""

from __future__ import annotations

from hub_api.endpoints import Operation, route

urlpatterns = [
    route(
        "webhooks",
        Operation("get", "webhook_list"),
        Operation("post", "webhook_create", created=True, repeatable=False, no_store=True),
        tag="webhooks",
    ),
    route("webhooks/<str:webhook_id>/enable", Operation("post", "webhook_enable"), tag="webhooks"),
    route("webhooks/<str:webhook_id>/disable", Operation("post", "webhook_disable"), tag="webhooks"),
    route("webhooks/<str:webhook_id>/delete", Operation("post", "webhook_delete"), tag="webhooks"),
    route("webhooks/<str:webhook_id>/deliveries", Operation("get", "webhook_deliveries"), tag="webhooks"),
]
