"""The dashboard's tokens page: a network's tokens with whom each may act as (its binding), made
(the raw value shown once) and revoked by the network's owners and admins, and the network's identity
policy switched, audited, after a page that names what the switch to strict takes away. Members and
viewers get a 403 and no link, as on the other admin pages.

Every write goes through hub_agents' services (token_create, token_revoke, network_policy_set), as
the admin's and the CLI's do; what an admin may give or take away is hub_agents.selectors'."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from hub_agents.identity import network_policy
from hub_agents.models import IdentityPolicy, Network, Role
from hub_agents.selectors import token_list, token_revocable, token_roles_grantable, tokens_losing_access
from hub_agents.services import network_policy_set, token_create, token_revoke
from hub_core.errors import HubError
from hub_dashboard.views import Desk, admins_only
from hub_dashboard.wording import refusal_for_operator

ADMINS_ONLY = "Only the network's owners and admins see and manage its tokens."
OWNERS_SWITCH = "Only the network's owners switch its identity policy."
ROLES = {
    Role.OWNER: "owner: everything, and may give every role",
    Role.ADMIN: "admin: everything but giving the owner role",
    Role.MEMBER: "member: acts as agents, sends and answers (the agents' role)",
    Role.VIEWER: "viewer: reads only, acts as no agent",
}


# What each identity policy means, as the page and its messages say it (hub_agents.identity's table).
POLICIES = {
    IdentityPolicy.OPEN: "any member, admin or owner token may act as any agent (the contract's way); a token "
    "bound to aliases acts only as them.",
    IdentityPolicy.STRICT: "only a token bound to an alias acts as that agent; a token bound to none acts only as "
    "itself (an owner's or admin's still moderates channels).",
}


class TokenForm(forms.Form):
    name = forms.CharField(
        label="Name", max_length=200, required=False, help_text="Who uses it: the agent, node or script."
    )
    role = forms.ChoiceField(label="Role", initial=Role.MEMBER)
    aliases = forms.CharField(
        label="Acts as",
        required=False,
        help_text="The agents it may act as: aliases or patterns such as build-*, separated by commas (a node's "
        "agents). Blank: unbound, any agent of an open network and none of a strict one. Fixed once made.",
    )

    def __init__(self, *args: Any, roles: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["role"].choices = [(role, ROLES[role]) for role in roles]


@login_required
def tokens_page(request: HttpRequest) -> HttpResponse:
    """The list, the policy and the form for a new token (POSTed here: on success the page shows the
    raw value, once)."""
    desk = Desk(request)
    if refusal := admins_only(request, desk, ADMINS_ONLY):
        return refusal
    roles = token_roles_grantable(actor=desk.actor, network_id=desk.network_id)
    form = TokenForm(request.POST or None, roles=roles)
    created, raw, status = None, "", 200
    if request.method == "POST":
        if form.is_valid():
            try:
                created, raw = token_create(
                    network=Network.objects.get(pk=desk.network_id), by=desk.actor.label, **form.cleaned_data
                )
            except HubError as refusal:
                shown = refusal_for_operator(refusal)
                form.add_error(shown.field if shown.field in form.fields else None, shown.text)
            else:
                form = TokenForm(roles=roles)
        status = 400 if form.errors else 201
    policy = network_policy(desk.network_id)
    context = {
        "tokens": token_list(actor=desk.actor, network_id=desk.network_id),
        "policy": policy,
        "meaning": POLICIES[policy],
        "other": IdentityPolicy.OPEN if policy == IdentityPolicy.STRICT else IdentityPolicy.STRICT,
        "form": form,
        "created": created,
        "raw": raw,
    }
    response = render(request, "dashboard/tokens.html", desk.context(section="tokens", **context), status=status)
    if raw:
        response["Cache-Control"] = "no-store"  # the raw token must not stay in any cache
    return response


@login_required
@require_POST
def token_revoke_action(request: HttpRequest, token_id: int) -> HttpResponse:
    desk = Desk(request)
    if refusal := admins_only(request, desk, ADMINS_ONLY):
        return refusal
    token = token_revocable(actor=desk.actor, network_id=desk.network_id, token_id=token_id)
    if token is None:
        messages.error(request, "No such live network token here that you may revoke: it may be revoked already.")
    elif token_revoke(token=token, by=desk.actor.label):
        messages.success(request, f"Token {token.prefix}… revoked: it is refused from its next request.")
    return redirect("dashboard:tokens")


@login_required
def policy_page(request: HttpRequest) -> HttpResponse:
    """GET ?policy=strict|open: what the switch changes (to strict: the unbound tokens agents reported
    through, with those agents, the unbound ones that keep working as themselves, and the agents no
    bound token acts as), and the button that makes it; POST policy=…: the switch, audited."""
    desk = Desk(request)
    if refusal := admins_only(request, desk, ADMINS_ONLY):
        return refusal
    source = request.POST if request.method == "POST" else request.GET
    wanted = source.get("policy")
    if wanted not in IdentityPolicy.values:
        return redirect("dashboard:tokens")
    may_switch = desk.actor.roles.get(desk.network_id) == Role.OWNER  # the policy is the owners' call
    if request.method == "POST":
        if not may_switch:
            return render(request, "dashboard/not_found.html", desk.context(message=OWNERS_SWITCH), status=403)
        network = Network.objects.get(pk=desk.network_id)
        if network_policy_set(network=network, policy=wanted, by=desk.actor.label):
            messages.success(request, f"{network.name} is {wanted} now: {POLICIES[wanted]}")
        else:
            messages.info(request, f"{network.name} already was {wanted}.")
        return redirect("dashboard:tokens")
    losing = tokens_losing_access(actor=desk.actor, network_id=desk.network_id) if wanted == "strict" else None
    policy = network_policy(desk.network_id)
    context = {
        "wanted": wanted,
        "policy": policy,
        "meaning": POLICIES[wanted],
        "losing": losing,
        "may_switch": may_switch,
        "owners_switch": OWNERS_SWITCH,
    }
    return render(request, "dashboard/token_policy.html", desk.context(section="tokens", **context))
