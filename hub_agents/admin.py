"""The admin: networks and their members, tokens, sessions, nodes and the audit log.

Every change that the audit log records goes through the same service the CLI and the API use
(network_create, membership_set, token_create, ...), so an admin click is audited like any call.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from hub_agents.identity import binding_parse
from hub_agents.models import (
    AgentSession,
    ApiToken,
    AuditEntry,
    IdentityPolicy,
    Membership,
    Network,
    Node,
    NodeCommand,
    Role,
)
from hub_agents.selectors import binding_text
from hub_agents.services import (
    membership_remove,
    membership_set,
    network_create,
    network_delete,
    network_policy_set,
    token_create,
    token_revoke,
)
from hub_core import validate
from hub_core.errors import HubError


def actor_label(request: HttpRequest) -> str:
    return f"user:{request.user.get_username()}"


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]


def _checked(check: Any, field: str, value: Any) -> Any:
    """A service's own validation, as a form error: the admin refuses what the API refuses."""
    try:
        return check(field, value)
    except HubError as refusal:
        raise forms.ValidationError(refusal.error) from None


class NetworkForm(forms.ModelForm):
    class Meta:
        model = Network
        fields = ["name", "default_lease_seconds", "identity_policy"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["identity_policy"].required = False  # left out: as it is (a new network: open)

    def clean_name(self) -> str:
        return _checked(validate.required_identifier, "name", self.cleaned_data["name"])

    def clean_identity_policy(self) -> str:
        kept = self.instance.identity_policy if self.instance.pk else IdentityPolicy.OPEN
        return self.cleaned_data["identity_policy"] or kept


@admin.register(Network)
class NetworkAdmin(admin.ModelAdmin):
    form = NetworkForm
    list_display = ["name", "id", "default_lease_seconds", "identity_policy", "created_at"]
    list_filter = ["identity_policy"]
    search_fields = ["name", "id"]
    readonly_fields = ["id", "created_at"]
    inlines = [MembershipInline]

    def save_model(self, request: HttpRequest, obj: Network, form: forms.ModelForm, change: bool) -> None:
        # The identity policy changes who may act as which agent: network_policy_set writes it, audited.
        policy, by = form.cleaned_data["identity_policy"], actor_label(request)
        if change:
            obj.save(update_fields=["name", "default_lease_seconds"])
        else:
            created, _ = network_create(name=obj.name, by=by)
            obj.pk, obj.created_at = created.pk, created.created_at
            obj._state.adding = False
            if obj.default_lease_seconds is not None:  # network_create knows only the name
                Network.objects.filter(pk=obj.pk).update(default_lease_seconds=obj.default_lease_seconds)
        network_policy_set(network=obj, policy=policy, by=by)

    def save_formset(self, request: HttpRequest, form: forms.ModelForm, formset: BaseInlineFormSet, change: bool):
        if formset.model is not Membership:
            return super().save_formset(request, form, formset, change)
        network, by = form.instance, actor_label(request)
        memberships = formset.save(commit=False)
        for membership in formset.deleted_objects:
            membership_remove(user=membership.user, network=network, by=by)
        for membership, changed in formset.changed_objects:
            if "user" in changed:  # a row handed to another user: the previous one leaves
                previous = Membership.objects.get(pk=membership.pk).user
                membership_remove(user=previous, network=network, by=by)
        for membership in memberships:
            saved = membership_set(user=membership.user, network=network, role=membership.role, by=by)
            membership.pk = saved.pk
        return None

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[Any, Any, set[str], Any]:
        # Tokens cannot be deleted one by one (they are revoked), but they go with their network.
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        return deleted, counts, perms_needed - {ApiToken._meta.verbose_name}, protected

    def delete_model(self, request: HttpRequest, obj: Network) -> None:
        network_delete(network=obj, by=actor_label(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Network]) -> None:
        for network in queryset:
            network_delete(network=network, by=actor_label(request))


class TokenCreationForm(forms.ModelForm):
    # Text, not the model's JSON: aliases and patterns as an operator types them, parsed as the CLI's.
    aliases = forms.CharField(
        label="Acts as",
        required=False,
        help_text="The agents it may act as: aliases or patterns such as build-*, separated by commas. Blank: "
        "unbound, acting as any agent of an open network and as none of a strict one. Fixed once made.",
    )

    class Meta:
        model = ApiToken
        fields = ["name", "network", "role", "user", "tool_profile", "aliases"]
        help_texts = {
            "network": "A network token acts in this network only, with the role below.",
            "user": "Or: a user token, which acts as this user in each of the user's networks.",
            "tool_profile": "The tools its MCP connections list and may call (/mcp?tools= may narrow them).",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tool_profile"].required = False  # left empty: every tool, as before profiles

    def clean_name(self) -> str:
        return _checked(partial(validate.text, max_len=200), "name", self.cleaned_data["name"])

    def clean_aliases(self) -> list[str]:
        return _checked(lambda _field, value: binding_parse(value), "aliases", self.cleaned_data["aliases"])

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        network, user = data.get("network"), data.get("user")
        if (network is None) == (user is None):
            raise forms.ValidationError("Choose a network (for a network token) or a user (for a user token).")
        if network is not None and not data.get("role"):
            data["role"] = Role.MEMBER
        if user is not None and data.get("role"):
            self.add_error("role", "A user token has the user's roles; leave the role empty.")
        return data


class BindingFilter(admin.SimpleListFilter):
    title = "binding"
    parameter_name = "bound"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("yes", "bound to aliases"), ("no", "unbound")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> QuerySet[ApiToken]:
        if self.value() in ("yes", "no"):
            unbound = queryset.filter(aliases=[])
            return unbound if self.value() == "no" else queryset.exclude(pk__in=unbound.values("pk"))
        return queryset


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are created here (the raw value is shown once) and revoked, never edited or deleted. Its
    binding too is fixed once made: to change whom a token acts as, make another and revoke it."""

    list_display = [
        "prefix", "name", "kind", "network", "user", "role", "binding", "tool_profile", "created_at", "last_used_at",
        "revoked_at",
    ]  # fmt: skip
    list_filter = ["kind", "role", BindingFilter, "tool_profile", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["prefix", "name"]
    readonly_fields = [
        "kind", "prefix", "network", "user", "role", "binding", "tool_profile", "created_at", "last_used_at",
        "revoked_at",
    ]  # fmt: skip
    fields = ["name", *readonly_fields]
    autocomplete_fields = ["network", "user"]
    actions = ["revoke"]

    def get_form(self, request: HttpRequest, obj: ApiToken | None = None, **kwargs: Any) -> type[forms.ModelForm]:
        if obj is None:
            kwargs["form"] = TokenCreationForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> list[str]:
        return TokenCreationForm.Meta.fields if obj is None else self.fields

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> list[str]:
        return [] if obj is None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: ApiToken, form: forms.ModelForm, change: bool) -> None:
        if change:
            obj.save(update_fields=["name"])
            return
        data = form.cleaned_data
        token, raw = token_create(
            network=data["network"],
            role=data.get("role") or None,
            user=data["user"],
            name=data["name"],
            tool_profile=data.get("tool_profile") or None,
            aliases=data.get("aliases") or None,
            by=actor_label(request),
        )
        obj.pk, obj.prefix, obj.kind, obj.aliases = token.pk, token.prefix, token.kind, token.aliases
        obj._state.adding = False
        request._commhub_raw_token = raw  # shown by response_add, once, and stored nowhere

    def response_add(self, request: HttpRequest, obj: ApiToken, post_url_continue: str | None = None) -> HttpResponse:
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "token": obj,
            "raw": request._commhub_raw_token,
            "binding": binding_text(obj.aliases),
            "title": "Token created",
        }
        response = TemplateResponse(request, "admin/hub_agents/apitoken/created.html", context)
        response["Cache-Control"] = "no-store"  # the raw token must not stay in any cache
        return response

    @admin.display(description="binding")
    def binding(self, obj: ApiToken) -> str:
        return binding_text(obj.aliases)

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        revoked = sum(token_revoke(token=token, by=actor_label(request)) for token in queryset)
        self.message_user(request, f"Revoked {revoked} token(s); they are refused from their next request.")

    def has_delete_permission(self, request: HttpRequest, obj: ApiToken | None = None) -> bool:
        return False  # revoke instead: the row is the record of what the token did


@admin.register(AgentSession)
class AgentSessionAdmin(admin.ModelAdmin):
    list_display = ["alias", "status", "network", "agent", "model", "hostname", "last_seen_at"]
    list_filter = ["status", "network"]
    search_fields = ["alias", "resume_id", "hostname"]
    readonly_fields = ["token"]  # what its last report came through: a record, and no menu of every token


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["node_id", "node_name", "host", "slots_used", "slots_total", "network", "last_seen_at"]
    search_fields = ["node_id", "node_name", "host"]
    # What the node reports of itself (report_node): shown as it said it, changed only by its next report.
    readonly_fields = [
        "host", "os", "agent_version", "runtimes", "agents", "slots_total", "slots_used", "reported_at",
        "created_at",
    ]  # fmt: skip


@admin.register(NodeCommand)
class NodeCommandAdmin(admin.ModelAdmin):
    """Commands sent to nodes (node_command) and the nodes' answers: a record, read only here (sent
    from the Nodes page, REST or MCP, answered by the node, expired by the sweep)."""

    list_display = ["created_at", "kind", "node", "alias", "task_id", "status", "sent_by", "network"]
    list_filter = ["status", "kind"]
    search_fields = ["command_id", "alias", "task_id", "node__node_id", "sent_by"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: NodeCommand | None = None) -> bool:
        return False


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ["created_at", "action", "actor", "target", "network_name"]
    list_filter = ["action", "network_name"]
    search_fields = ["actor", "target", "network_id", "network_name"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AuditEntry | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AuditEntry | None = None) -> bool:
        return False
