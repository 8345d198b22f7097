"""A token's tool profile (issue 24): set where tokens are made (the service, `create_token
--profile`, the admin), carried by its actor, every tool by default, recorded in the audit log."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from hub_agents.models import ApiToken, AuditEntry
from hub_agents.services import token_authenticate, token_create, user_get_or_create
from tests.helpers import refused

RAW_ON_PAGE = re.compile(r'id="raw-token" value="([^"]*)"')


def create_token(*args: str) -> str:
    out = StringIO()
    call_command("create_token", *args, stdout=out, stderr=StringIO())
    return out.getvalue().strip().splitlines()[-1]


def test_a_token_has_every_tool_unless_made_with_a_profile(network):
    plain = token_authenticate(raw=token_create(network=network, name="plain")[1])
    narrow = token_authenticate(raw=token_create(network=network, name="narrow", tool_profile="agent")[1])

    assert (plain.tool_profile, narrow.tool_profile) == ("all", "agent")
    assert refused(token_create, network=network, tool_profile="everything").extra["field"] == "tool_profile"


@pytest.mark.parametrize(
    "who", [("--network", "alpha"), ("--user", "carol", "--network", "alpha")], ids=["ntok", "utok"]
)
def test_create_token_takes_a_profile(network, who):
    raw = create_token(*who, "--profile", "contract")

    assert token_authenticate(raw=raw).tool_profile == "contract"
    assert ApiToken.objects.get().tool_profile == "contract"
    (entry,) = AuditEntry.objects.filter(action="token.created")
    assert entry.detail["tool_profile"] == "contract"


def test_create_token_refuses_an_unknown_profile(network):
    with pytest.raises(CommandError, match="invalid choice"):
        create_token("--network", network.name, "--profile", "everything")
    assert not ApiToken.objects.exists()


def test_create_token_without_a_profile_gives_every_tool(network):
    assert token_authenticate(raw=create_token("--network", network.name)).tool_profile == "all"
    assert "tool_profile" not in AuditEntry.objects.get(action="token.created").detail


@pytest.fixture
def staff(client: Client, db) -> Client:
    boss: AbstractBaseUser = user_get_or_create(username="boss")
    boss.is_staff = boss.is_superuser = True
    boss.save()
    client.force_login(boss)
    return client


@pytest.mark.parametrize(("chosen", "profile"), [("lead", "lead"), ("", "all")], ids=["lead", "left-empty"])
def test_the_admin_makes_a_token_with_a_profile(staff, network, chosen, profile):
    form = {"name": "ci", "network": network.pk, "role": "member", "user": "", "tool_profile": chosen, "_save": "Save"}

    response = staff.post(reverse("admin:hub_agents_apitoken_add"), form)

    assert response.status_code == 200, response.content[:2000]
    raw = RAW_ON_PAGE.search(response.content.decode()).group(1)
    assert token_authenticate(raw=raw).tool_profile == profile
    change = staff.get(reverse("admin:hub_agents_apitoken_change", args=[ApiToken.objects.get().pk]))
    assert profile in change.content.decode()
