"""The tokens page (Django's test client): owners and admins list the network's tokens with whom each
acts as, make a bound token (its value shown once), revoke one, and switch the identity policy after a
page naming the unbound tokens agents reported through (with those agents), those that keep working
as themselves and the agents no bound token acts as, every change audited; members and viewers get
a 403 and no link."""

from __future__ import annotations

import re

import pytest

from hub_agents.models import AgentSession, ApiToken, AuditEntry, IdentityPolicy, Network
from hub_agents.services import membership_set, token_authenticate, token_create, token_revoke, user_get_or_create
from hub_core.errors import HubError
from tests.helpers.calls import report_status, send_task
from tests.helpers.dashboard import text

pytestmark = pytest.mark.django_db

RAW = re.compile(r'id="raw-token" value="([^"]+)"')


def row_of(page: str, token: ApiToken) -> str:
    found = re.search(rf'<tr data-token="{token.pk}".*?</tr>', page, flags=re.DOTALL)
    assert found, f"no row for {token.prefix}"
    return found.group(0)


def make(browser, **fields) -> object:
    return browser.post("/tokens/", {"name": "", "role": "member", "aliases": "", **fields})


def policy_of(network: Network) -> str:
    return Network.objects.values_list("identity_policy", flat=True).get(pk=network.pk)


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_an_admin_sees_the_networks_tokens_with_their_bindings(login, network, other_network, role):
    browser = login(role)
    bound, _ = token_create(network=network, name="coder-box", aliases="a-coder, build-*")
    unbound, _ = token_create(network=network, name="ci", role="viewer")
    carol = user_get_or_create(username="carol")
    membership_set(user=carol, network=network, role="admin")
    laptop, _ = token_create(user=carol, name="laptop", aliases=["carol-agent"])
    elsewhere, _ = token_create(network=other_network, name="elsewhere")

    page = text(browser.get("/tokens/"))

    assert "bound to <code>a-coder</code>, <code>build-*</code>" in row_of(page, bound)
    assert "unbound" in row_of(page, unbound) and ">viewer<" in row_of(page, unbound)
    laptop_row = row_of(page, laptop)
    assert "user token of carol" in laptop_row and ">admin<" in laptop_row and "carol-agent" in laptop_row
    assert 'name="revoke"' not in laptop_row  # a user token acts in every network of its user
    assert 'name="revoke"' in row_of(page, bound)
    assert elsewhere.prefix not in page and "elsewhere" not in page
    assert bound.digest not in page
    assert 'href="/tokens/"' in text(browser.get("/fleet/"))  # the nav link


def test_an_owner_makes_a_bound_token_and_sees_its_value_once(login, network):
    browser = login("owner")

    reply = make(browser, name="builder", role="member", aliases="builder-1, build-*")

    assert reply.status_code == 201
    assert "no-store" in reply.get("Cache-Control", "")
    raw = RAW.search(text(reply)).group(1)
    token = ApiToken.objects.get(name="builder")
    assert (token.network, token.role, token.aliases) == (network, "member", ["builder-1", "build-*"])
    assert token.digest == ApiToken.digest_of(raw)
    assert token_authenticate(raw=raw).aliases == ("builder-1", "build-*")
    entry = AuditEntry.objects.get(action=AuditEntry.Action.TOKEN_CREATED, network_id=network.pk)
    assert entry.actor == "user:operator" and entry.detail["aliases"] == ["builder-1", "build-*"]
    assert raw not in str(entry.detail) and raw not in entry.target
    listing = text(browser.get("/tokens/"))
    assert raw not in listing and "bound to <code>builder-1</code>, <code>build-*</code>" in row_of(listing, token)


def test_a_binding_the_hub_refuses_is_an_error_on_its_field(login, network):
    reply = make(login("owner"), name="everything", aliases="*")

    assert reply.status_code == 400
    assert 'id="error-aliases"' in text(reply) and "leave the token unbound" in text(reply)
    assert not RAW.search(text(reply))
    assert not ApiToken.objects.exists()


def test_an_admin_may_not_make_or_revoke_an_owner_token(login, network):
    browser = login("admin")
    owners, owners_raw = token_create(network=network, name="owners", role="owner")

    reply = make(browser, name="promoted", role="owner")
    browser.post(f"/tokens/{owners.pk}/revoke/")

    assert reply.status_code == 400 and 'id="error-role"' in text(reply)
    assert not ApiToken.objects.filter(name="promoted").exists()
    assert 'value="owner"' not in text(browser.get("/tokens/"))
    assert ApiToken.objects.get(pk=owners.pk).revoked_at is None
    assert token_authenticate(raw=owners_raw).roles == {network.pk: "owner"}


def test_an_owner_revokes_a_network_token_but_not_a_members_user_token(login, network):
    browser = login("owner")
    ci, ci_raw = token_create(network=network, name="ci")
    carol = user_get_or_create(username="carol")
    membership_set(user=carol, network=network)
    laptop, _ = token_create(user=carol, name="laptop")

    revoked = browser.post(f"/tokens/{ci.pk}/revoke/", follow=True)
    refused = browser.post(f"/tokens/{laptop.pk}/revoke/", follow=True)

    assert "revoked: it is refused from its next request" in text(revoked)
    with pytest.raises(HubError):
        token_authenticate(raw=ci_raw)
    assert AuditEntry.objects.get(action=AuditEntry.Action.TOKEN_REVOKED).actor == "user:operator"
    assert "No such live network token here" in text(refused)
    assert ApiToken.objects.get(pk=laptop.pk).revoked_at is None


@pytest.fixture
def fleet(network):
    """alpha with tokens of every kind, and agents that have reported: a-coder and build-7 through the
    tokens bound to them, reviewer (bound to none) and build-9 through the unbound old-ci."""
    made = {
        "bound": token_create(network=network, name="coder-box", aliases="a-coder"),
        "pattern": token_create(network=network, name="builders", aliases="build-*"),
        "unbound": token_create(network=network, name="old-ci"),
        "unbound-admin": token_create(network=network, name="lead", role="admin"),
        "viewer": token_create(network=network, name="grafana", role="viewer"),
        "revoked": token_create(network=network, name="gone"),
    }
    token_revoke(token=made["revoked"][0])
    carol = user_get_or_create(username="carol")
    membership_set(user=carol, network=network)
    made["carol"] = token_create(user=carol, name="carols-laptop")
    for key, alias in [("bound", "a-coder"), ("pattern", "build-7"), ("unbound", "reviewer"), ("unbound", "build-9")]:
        report_status(actor=token_authenticate(raw=made[key][1]), alias=alias, resume_id=f"r-{alias}", status="idle")
    lead = token_authenticate(raw=made["unbound-admin"][1])  # used, acting as no agent: dispatching
    send_task(actor=lead, alias="reviewer", task="review the release notes")
    return {key: token for key, (token, _) in made.items()} | {"raw": {key: raw for key, (_, raw) in made.items()}}


def table_of(page: str, kind: str) -> str:
    return re.search(rf'<table class="list stack {kind}">.*?</table>', page, flags=re.DOTALL).group(0)


def test_the_switch_to_strict_names_each_unbound_token_with_the_agents_reported_through_it(login, network, fleet):
    browser = login("owner")
    assert "Switch to strict" in text(browser.get("/tokens/"))

    page = text(browser.get("/tokens/policy/", {"policy": "strict"}))

    losing = table_of(page, "losing")
    for key in ("bound", "pattern", "unbound-admin", "carol", "viewer", "revoked"):
        assert f'data-token="{fleet[key].pk}"' not in losing, key
    old_ci = row_of(losing, fleet["unbound"])
    assert '<span data-alias="reviewer"><code>reviewer</code> <span class="muted">(no bound token yet)' in old_ci
    assert '<span data-alias="build-9"><code>build-9</code> <span class="muted">(a bound token acts as it)' in old_ci
    assert "a-coder" not in old_ci and "build-7" not in old_ci
    keeping = table_of(page, "keeping")  # unbound, used, but no agent reported through them
    assert "keep working as themselves" in page
    for key in ("unbound-admin", "carol"):
        assert f'data-token="{fleet[key].pk}"' in keeping, key
    for key in ("unbound", "bound", "pattern", "viewer", "revoked"):
        assert f'data-token="{fleet[key].pk}"' not in keeping, key
    assert keeping.index(f'data-token="{fleet["unbound-admin"].pk}"') < keeping.index(
        f'data-token="{fleet["carol"].pk}"'
    )  # most recently used first: carol's was never used
    agents = re.search(r'<p class="agents">(.*?)</p>', page).group(1)
    assert "<code>reviewer</code>" in agents and "a-coder" not in agents and "build-" not in agents
    assert 'id="unattributed"' not in page
    assert policy_of(network) == IdentityPolicy.OPEN  # asking changes nothing


def test_the_switch_to_strict_names_the_agents_whose_last_report_names_no_token(login, network, fleet):
    AgentSession.objects.filter(alias="build-9").update(token=None)  # as migration 0015 leaves older rows

    page = text(login("owner").get("/tokens/policy/", {"policy": "strict"}))

    assert "<code>build-9</code>" in re.search(r'<p class="muted" id="unattributed">.*?</p>', page).group(0)
    old_ci = row_of(table_of(page, "losing"), fleet["unbound"])
    assert "reviewer" in old_ci and "build-9" not in old_ci


def test_switching_the_policy_is_audited_and_takes_effect(login, network, fleet):
    browser = login("owner")
    unbound = token_authenticate(raw=fleet["raw"]["unbound"])
    bound = token_authenticate(raw=fleet["raw"]["bound"])

    reply = browser.post("/tokens/policy/", {"policy": "strict"}, follow=True)

    assert policy_of(network) == IdentityPolicy.STRICT
    assert "is strict now" in text(reply)
    entry = AuditEntry.objects.get(action=AuditEntry.Action.NETWORK_POLICY_CHANGED)
    assert (entry.actor, entry.target) == ("user:operator", "alpha")
    assert entry.detail == {"before": "open", "after": "strict"}
    with pytest.raises(HubError) as refused:
        report_status(actor=unbound, alias="reviewer", resume_id="r-reviewer", status="idle")
    assert refused.value.code == "alias_not_yours"
    assert report_status(actor=bound, alias="a-coder", resume_id="r-a-coder", status="idle")["ok"]

    browser.post("/tokens/policy/", {"policy": "strict"})  # again: nothing changes, nothing recorded
    browser.post("/tokens/policy/", {"policy": "open"})

    assert policy_of(network) == IdentityPolicy.OPEN
    changes = AuditEntry.objects.filter(action=AuditEntry.Action.NETWORK_POLICY_CHANGED).order_by("id")
    assert [entry.detail["after"] for entry in changes] == ["strict", "open"]
    assert report_status(actor=unbound, alias="reviewer", resume_id="r-reviewer", status="idle")["ok"]


def test_an_admin_sees_what_strict_would_take_away_but_only_an_owner_switches(login, network, fleet):
    browser = login("admin")

    page = text(browser.get("/tokens/policy/", {"policy": "strict"}))
    refused = browser.post("/tokens/policy/", {"policy": "strict"})

    assert "Tokens that would lose access" in page and 'name="confirm"' not in page
    assert 'id="owners-switch"' in page and "owners switch its identity policy" in page
    assert refused.status_code == 403
    assert policy_of(network) == IdentityPolicy.OPEN
    assert not AuditEntry.objects.filter(action=AuditEntry.Action.NETWORK_POLICY_CHANGED).exists()


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_members_and_viewers_see_no_tokens_and_change_nothing(login, network, fleet, role):
    browser = login(role)

    assert browser.get("/tokens/").status_code == 403
    assert make(browser, name="mine", aliases="anything").status_code == 403
    assert browser.get("/tokens/policy/", {"policy": "strict"}).status_code == 403
    assert browser.post("/tokens/policy/", {"policy": "strict"}).status_code == 403
    assert browser.post(f"/tokens/{fleet['unbound'].pk}/revoke/").status_code == 403

    assert not ApiToken.objects.filter(name="mine").exists()
    assert ApiToken.objects.get(pk=fleet["unbound"].pk).revoked_at is None
    assert policy_of(network) == IdentityPolicy.OPEN
    assert not AuditEntry.objects.filter(action=AuditEntry.Action.NETWORK_POLICY_CHANGED).exists()
    assert 'href="/tokens/"' not in text(browser.get("/fleet/"))
    assert fleet["unbound"].prefix not in text(browser.get("/tokens/"))


def test_a_form_posted_for_another_network_acts_on_that_network(login, network, other_network, django_user_model):
    """The forms name their network: a switch in another tab meanwhile does not redirect them."""
    browser = login("owner")
    membership_set(user=django_user_model.objects.get(username="operator"), network=other_network, role="owner")
    browser.get("/fleet/", {"network": other_network.pk})  # the session now looks at beta

    browser.post(f"/tokens/policy/?network={network.pk}", {"policy": "strict"})

    assert (policy_of(network), policy_of(other_network)) == ("strict", "open")
