from __future__ import annotations

from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularSwaggerSplitView

from commhub.health import healthz
from commhub.login_guard import AdminLoginForm
from commhub.metrics import metrics_view
from hub_api.cards import hub_card_view, key_set_view
from hub_api.errors import api_not_found
from hub_api.schema import SchemaView
from hub_live.sse import event_stream
from hub_mcp.views import mcp_endpoint, well_known_not_found

# The admin's login goes through the failed-login guard like the dashboard's (commhub.login_guard).
admin.site.login_form = AdminLoginForm

api = [
    path("", include("hub_api.agents")),
    path("", include("hub_api.tasks")),
    path("", include("hub_api.channels")),
    path("", include("hub_api.search")),
    path("", include("hub_api.webhooks")),
    path("", include("hub_api.schedules")),
    path("", include("hub_api.caps")),
    path("", include("hub_api.budgets")),
    path("", include("hub_api.cards")),
    path("", include("hub_api.whoami")),
    path("schema", SchemaView.as_view(), name="schema"),
    # The split view serves its start-up script as a file: the pages' CSP runs no inline script.
    path("docs", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="docs"),
    re_path(r"^(?P<path>.*)$", api_not_found),
]

urlpatterns = [
    # Both spellings answer directly: a redirect would lose the POST body in many clients.
    path("mcp", mcp_endpoint, name="mcp"),
    path("mcp/", mcp_endpoint),
    # The hub's A2A agent card (hub_api.cards), ahead of the other /.well-known/ paths, which it has not.
    path(".well-known/agent-card.json", hub_card_view, name="hub_agent_card"),
    path(".well-known/jwks.json", key_set_view, name="jwks"),  # the keys the cards are signed with
    re_path(r"^\.well-known/(?P<path>.*)$", well_known_not_found),
    path("api/v1/", include(api)),
    path("events/<str:alias>", event_stream, name="events"),
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("", include("hub_dashboard.urls")),
]

handler500 = "hub_api.errors.server_error"
