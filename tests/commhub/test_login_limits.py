"""Failed-login limits on both login pages, over real HTTP against live hubs (issue 12, item 4).

With REDIS_URL set, two hub processes share one count: the attempts alternate between them. Each
test counts under a prefix of its own, so neither earlier runs nor other tests sharing the Redis
can lock it. Every wrong password costs a full password hash, so these take some seconds each.
"""

from __future__ import annotations

import asyncio
import os
import uuid

import httpx
import pytest
from django.contrib.auth import aauthenticate, authenticate
from django.test import RequestFactory

from hub_agents.models import AuditEntry
from hub_core import ratelimit
from hub_core.errors import HubError
from tests.helpers.live import Hub

PASSWORD = "correct horse battery staple"
PAGES = {
    # page: what it answers a wrong password with
    "/login/": "didn't match",
    "/admin/login/": "Please enter the correct username and password",
}


@pytest.fixture
def hubs(hub_server) -> list[Hub]:
    """One live hub; two when REDIS_URL is set (the count must then be shared between processes)."""
    env = {"COMMHUB_RATE_LIMIT_PREFIX": f"test-login-{uuid.uuid4().hex}"}
    return [hub_server(env) for _ in range(2 if os.environ.get("REDIS_URL") else 1)]


@pytest.fixture
def operator(django_user_model) -> str:
    django_user_model.objects.create_user("alice", password=PASSWORD, is_staff=True, is_superuser=True)
    return "alice"


def log_in(client: httpx.Client, hub: Hub, page: str, username: str, password: str) -> httpx.Response:
    """The browser's steps: the form (for its CSRF cookie), then the post."""
    assert client.get(f"{hub.url}{page}").status_code == 200
    form = {"username": username, "password": password, "csrfmiddlewaretoken": client.cookies["csrftoken"]}
    return client.post(f"{hub.url}{page}", data=form)


def outcome(reply: httpx.Response, page: str) -> str:
    if reply.status_code == 302:
        return "logged in"
    assert reply.status_code == 200, reply.text[:500]
    if "Too many failed logins for this username" in reply.text:
        return "locked: username"
    if "Too many failed logins for your address" in reply.text:
        return "locked: address"
    assert PAGES[page] in reply.text, reply.text[:2000]
    return "wrong password"


def attempts(hubs: list[Hub], page: str, logins: list[tuple[str, str]]) -> list[str]:
    """Each (username, password) in turn, alternating between the hubs; what each was answered."""
    with httpx.Client(timeout=30) as client:
        return [outcome(log_in(client, hubs[n % len(hubs)], page, *login), page) for n, login in enumerate(logins)]


def lockouts() -> list[dict]:
    return list(AuditEntry.objects.filter(action="login.locked").values("network_id", "actor", "target", "detail"))


@pytest.mark.parametrize("page", PAGES)
def test_a_username_is_locked_after_ten_failures_even_for_the_right_password(hubs, operator, django_user_model, page):
    django_user_model.objects.create_user("bob", password=PASSWORD, is_staff=True)

    answered = attempts(hubs, page, [(operator, f"guess-{n}") for n in range(25)] + [(operator, PASSWORD)])

    assert answered[:10] == ["wrong password"] * 10
    assert answered[10:] == ["locked: username"] * 16  # the 26th, the right password, too
    with httpx.Client(timeout=30) as client:
        refused = log_in(client, hubs[-1], page, operator, PASSWORD)
    assert "Wait 15 minutes and try again" in refused.text
    assert "sessionid" not in refused.cookies
    # The lock is the username's: another operator at the same address still gets in.
    assert attempts(hubs, page, [("bob", PASSWORD)]) == ["logged in"]
    rows = lockouts()
    assert [(row["network_id"], row["actor"], row["target"]) for row in rows] == [
        ("", "address:127.0.0.1", "username:alice")
    ]
    detail = rows[0]["detail"]
    assert (detail["scope"], detail["failures"], detail["window_seconds"]) == ("username", 10, 900)
    # The wait runs from the oldest failure, a few seconds before the tenth.
    assert 800 < detail["locked_for_seconds"] <= 900


@pytest.mark.parametrize("page", PAGES)
def test_an_address_is_locked_after_twenty_failures_over_any_usernames(hubs, operator, django_user_model, page):
    django_user_model.objects.create_user("bob", password=PASSWORD, is_staff=True)

    answered = attempts(hubs, page, [(f"user-{n}", "guess") for n in range(25)] + [(operator, PASSWORD)])

    assert answered[:20] == ["wrong password"] * 20
    assert answered[20:] == ["locked: address"] * 6
    assert attempts(hubs, page, [("bob", PASSWORD)]) == ["locked: address"]
    rows = lockouts()
    assert [(row["actor"], row["target"], row["detail"]["scope"]) for row in rows] == [
        ("address:127.0.0.1", "address:127.0.0.1", "address")
    ]
    assert "user-" not in str(rows)  # what was typed as a username stays out of an address lockout


def test_a_successful_login_is_not_a_failure(hubs, operator):
    answered = attempts(hubs, "/login/", [(operator, PASSWORD)] * 12 + [(operator, "guess")] * 9)

    assert answered == ["logged in"] * 12 + ["wrong password"] * 9
    assert attempts(hubs, "/login/", [(operator, PASSWORD)]) == ["logged in"]
    assert lockouts() == []


# --- authenticate() itself: every login path, sync and async ---------------------------------------


@pytest.mark.django_db
def test_authenticate_itself_refuses_while_locked(django_user_model, settings):
    settings.COMMHUB_LOGIN_FAILURE_LIMIT = "2/minute"
    ratelimit.reset()
    django_user_model.objects.create_user("carol", password=PASSWORD)
    request = RequestFactory().post("/somewhere-new/", REMOTE_ADDR="192.0.2.7")

    assert authenticate(request, username="carol", password="nope") is None
    assert authenticate(request, username="carol", password="nope") is None
    with pytest.raises(HubError) as locked:
        authenticate(request, username="carol", password=PASSWORD)
    with pytest.raises(HubError):
        asyncio.run(aauthenticate(request, username="carol", password=PASSWORD))

    assert locked.value.code == "login_locked" and locked.value.status == 429
    assert 0 < locked.value.extra["retry_after"] <= 60
    assert authenticate(RequestFactory().post("/", REMOTE_ADDR="192.0.2.8"), username="dave", password="x") is None
