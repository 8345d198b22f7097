"""Which network the dashboard opens on (issue 24 item 9): the first login after `make run`'s printed
commands shows the agents they made, and the network an operator chooses is the one they find at
their next login."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import Client

from hub_agents.models import Membership, Network
from hub_agents.services import membership_set, network_create, token_authenticate, token_create
from tests.helpers.calls import report_status

pytestmark = pytest.mark.django_db


def logged_in(username: str) -> Client:
    """A fresh browser through the login form, as a person signs in."""
    browser = Client()
    reply = browser.post("/login/", {"username": username, "password": "pw"})
    assert reply.status_code == 302, reply.content.decode()[:500]
    return browser


def agent_of(network: Network, alias: str) -> None:
    _, raw = token_create(network=network, role="member", name=alias)
    report_status(actor=token_authenticate(raw=raw), alias=alias, status="working", resume_id=f"r-{alias}")


def test_the_first_login_after_the_printed_commands_shows_their_agents(django_user_model):
    # make run's lines, in their order: a network and an agent token, an agent, then the operator.
    call_command("create_network", "demo")
    agent_of(Network.objects.get(name="demo"), "coder")
    django_user_model.objects.create_superuser("boss", password="pw")

    page = logged_in("boss").get("/fleet/").content.decode()

    assert "coder" in page and "selected>demo</option>" in page
    assert Membership.objects.get(user__username="boss", network__name="demo").role == "owner"
    assert not Network.objects.filter(name="default").exists()  # no empty network beside it


def test_on_an_install_without_networks_the_first_superuser_still_owns_default(django_user_model):
    django_user_model.objects.create_superuser("boss", password="pw")

    assert logged_in("boss").get("/fleet/").status_code == 200
    assert Membership.objects.get(user__username="boss").network.name == "default"


def test_a_network_someone_owns_is_not_taken_by_a_new_superuser(django_user_model):
    demo, _ = network_create(name="demo")
    membership_set(user=django_user_model.objects.create_user("ada", password="pw"), network=demo, role="owner")
    django_user_model.objects.create_superuser("boss", password="pw")

    logged_in("boss").get("/fleet/")

    assert not Membership.objects.filter(user__username="boss", network=demo).exists()
    assert Membership.objects.get(user__username="boss").network.name == "default"


def test_the_chosen_network_sticks_across_logins(django_user_model):
    ada = django_user_model.objects.create_user("ada", password="pw")
    alpha, beta = network_create(name="alpha")[0], network_create(name="beta")[0]
    for network in (alpha, beta):
        membership_set(user=ada, network=network, role="owner")
        agent_of(network, f"agent-of-{network.name}")

    first = logged_in("ada")
    assert "selected>beta</option>" in first.get(f"/fleet/?network={beta.pk}").content.decode()
    first.post("/logout/")

    again = logged_in("ada").get("/fleet/").content.decode()
    assert "selected>beta</option>" in again and "agent-of-beta" in again and "agent-of-alpha" not in again


def test_without_a_choice_the_login_lands_where_the_agents_are(django_user_model):
    ada = django_user_model.objects.create_user("ada", password="pw")
    empty, busy = network_create(name="aaa-empty")[0], network_create(name="zzz-busy")[0]
    for network in (empty, busy):
        membership_set(user=ada, network=network, role="owner")
    agent_of(busy, "coder")

    page = logged_in("ada").get("/fleet/").content.decode()

    assert "selected>zzz-busy</option>" in page and "coder" in page
