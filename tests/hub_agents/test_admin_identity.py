"""The admin and identities: a token's binding set when it is made (and fixed after), shown and filtered
on in the list; a network's identity policy changed through network_policy_set, audited."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from django.urls import reverse

from hub_agents.models import ApiToken, AuditEntry, IdentityPolicy, Network
from hub_agents.services import token_authenticate, token_create

RAW_ON_PAGE = re.compile(r'id="raw-token" value="([^"]*)"')


@pytest.fixture
def staff(client: Client, django_user_model: Any) -> Client:
    boss: AbstractBaseUser = django_user_model.objects.create_superuser("boss", email="boss@example.com")
    client.force_login(boss)
    return client


def add_token(staff: Client, **fields: Any) -> Any:
    form = {"name": "", "network": "", "role": "", "user": "", "aliases": "", "_save": "Save", **fields}
    return staff.post(reverse("admin:hub_agents_apitoken_add"), form)


def policy_changes() -> list[tuple[str, str, dict[str, Any]]]:
    rows = AuditEntry.objects.filter(action=AuditEntry.Action.NETWORK_POLICY_CHANGED).order_by("id")
    return [(row.actor, row.target, row.detail) for row in rows]


# --- tokens --------------------------------------------------------------------------------------


def test_a_token_made_with_aliases_is_bound_to_them(staff, network):
    response = add_token(staff, name="box", network=network.pk, aliases="a-coder, build-*")

    assert response.status_code == 200, response.content.decode()[:3000]
    raw = RAW_ON_PAGE.search(response.content.decode()).group(1)
    assert "bound to a-coder, build-*" in response.content.decode()
    assert token_authenticate(raw=raw).aliases == ("a-coder", "build-*")
    entry = AuditEntry.objects.get(action=AuditEntry.Action.TOKEN_CREATED)
    assert (entry.actor, entry.detail["aliases"]) == ("user:boss", ["a-coder", "build-*"])


def test_a_token_made_without_aliases_is_unbound(staff, network):
    raw = RAW_ON_PAGE.search(add_token(staff, network=network.pk).content.decode()).group(1)

    assert token_authenticate(raw=raw).aliases == ()
    assert ApiToken.objects.get().aliases == []


@pytest.mark.parametrize("aliases", ["*", "a, **"])
def test_a_refused_binding_is_an_error_on_its_field(staff, network, aliases):
    response = add_token(staff, network=network.pk, aliases=aliases)

    body = response.content.decode()
    assert response.status_code == 200 and "errornote" in body
    assert re.search(r'class="errorlist[^"]*"[^>]*>\s*<li>aliases: names', body), body[:4000]
    assert not RAW_ON_PAGE.search(body) and not ApiToken.objects.exists()


def test_the_list_shows_each_binding_and_filters_on_it(staff, network):
    bound, _ = token_create(network=network, name="box", aliases="a-coder, build-*")
    unbound, _ = token_create(network=network, name="ci")
    changelist = reverse("admin:hub_agents_apitoken_changelist")

    page = staff.get(changelist).content.decode()
    only_bound = staff.get(changelist, {"bound": "yes"}).content.decode()
    only_unbound = staff.get(changelist, {"bound": "no"}).content.decode()

    assert "bound to a-coder, build-*" in page and "unbound" in page
    assert bound.prefix in only_bound and unbound.prefix not in only_bound
    assert unbound.prefix in only_unbound and bound.prefix not in only_unbound


def test_a_binding_is_fixed_once_made(staff, network):
    token, raw = token_create(network=network, name="box", aliases="a-coder")
    change = reverse("admin:hub_agents_apitoken_change", args=[token.pk])

    page = staff.get(change).content.decode()
    response = staff.post(change, {"name": "renamed", "aliases": "anyone, *", "_save": "Save"})

    assert "bound to a-coder" in page and 'name="aliases"' not in page
    assert response.status_code == 302
    token.refresh_from_db()
    assert (token.name, token.aliases) == ("renamed", ["a-coder"])
    assert token_authenticate(raw=raw).aliases == ("a-coder",)


# --- networks ------------------------------------------------------------------------------------


def network_form(network: Network, **fields: Any) -> dict[str, Any]:
    return {
        "name": network.name,
        "_save": "Save",
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
        **fields,
    }


def test_changing_a_networks_policy_is_audited_as_the_admin(staff, network):
    change = reverse("admin:hub_agents_network_change", args=[quote(network.pk)])
    assert 'name="identity_policy"' in staff.get(change).content.decode()

    response = staff.post(change, network_form(network, identity_policy="strict", default_lease_seconds="60"))

    assert response.status_code == 302, response.content.decode()[:3000]
    network.refresh_from_db()
    assert (network.identity_policy, network.default_lease_seconds) == ("strict", 60)
    assert policy_changes() == [("user:boss", "alpha", {"before": "open", "after": "strict"})]
    assert "strict" in staff.get(reverse("admin:hub_agents_network_changelist")).content.decode()


def test_saving_a_network_without_changing_its_policy_records_no_change(staff, network):
    network.identity_policy = IdentityPolicy.STRICT
    network.save(update_fields=["identity_policy"])
    change = reverse("admin:hub_agents_network_change", args=[quote(network.pk)])

    for fields in ({"identity_policy": "strict"}, {}):  # left out: as it is
        assert staff.post(change, network_form(network, **fields)).status_code == 302

    network.refresh_from_db()
    assert network.identity_policy == "strict"
    assert policy_changes() == []


def test_a_network_added_strict_is_audited_made_then_switched(staff, db):
    response = staff.post(
        reverse("admin:hub_agents_network_add"), network_form(Network(name="gamma"), identity_policy="strict")
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    gamma = Network.objects.get(name="gamma")
    assert gamma.identity_policy == "strict"
    assert list(AuditEntry.objects.filter(network_id=gamma.pk).order_by("id").values_list("action", flat=True)) == [
        "network.created",
        "network.policy_changed",
    ]
