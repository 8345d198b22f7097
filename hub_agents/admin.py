from __future__ import annotations

from django.contrib import admin

from hub_agents.models import AgentSession, ApiToken, Membership, Network, Node


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Network)
class NetworkAdmin(admin.ModelAdmin):
    list_display = ["name", "id", "created_at"]
    search_fields = ["name", "id"]
    inlines = [MembershipInline]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    # Tokens are made with `manage.py create_token`, which shows the raw value once; the admin
    # shows only what identifies a token and can revoke it.
    list_display = ["prefix", "name", "kind", "network", "user", "role", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["kind", "role", "revoked_at"]
    search_fields = ["prefix", "name"]
    readonly_fields = ["kind", "prefix", "network", "user", "role", "created_at", "last_used_at"]
    exclude = ["digest"]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(AgentSession)
class AgentSessionAdmin(admin.ModelAdmin):
    list_display = ["alias", "status", "network", "agent", "model", "hostname", "last_seen_at"]
    list_filter = ["status", "network"]
    search_fields = ["alias", "resume_id", "hostname"]


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["node_id", "node_name", "model", "runtime", "network", "last_seen_at"]
    search_fields = ["node_id", "node_name"]
