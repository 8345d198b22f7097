"""Shared fixtures: two networks, and actors of every kind built from real tokens."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator

import pytest
from django.db import connection

from hub_agents.actors import Actor
from hub_agents.models import Network
from hub_agents.services import (
    membership_set,
    network_create,
    token_authenticate,
    token_create,
    user_get_or_create,
)
from hub_core import ratelimit
from hub_core.events import HubEvent, hub_event
from hub_fleet.services import session_report

ActorFactory = Callable[..., Actor]

logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request drowns a failure's output


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """No persistent connections in tests: a live server's request threads would keep the test
    database busy and PostgreSQL could not drop it at the end."""
    from django.conf import settings

    settings.DATABASES["default"]["CONN_MAX_AGE"] = 0
    # Nor a pool in the test process: its idle connections would keep the test database from
    # being dropped. The hub processes the live tests start do use it.
    settings.DATABASES["default"].get("OPTIONS", {}).pop("pool", None)


@pytest.fixture(autouse=True)
def fresh_rate_limits(settings) -> Iterator[None]:
    """Each test counts writes afresh: tokens' primary keys repeat across tests (and test runs
    sharing one Redis), so a shared count would limit a test for what another one did."""
    settings.COMMHUB_RATE_LIMIT_PREFIX = f"test-{uuid.uuid4().hex}"
    ratelimit.reset()
    yield
    ratelimit.reset()


@pytest.fixture
def network(db) -> Network:
    return network_create(name="alpha")[0]


@pytest.fixture
def other_network(db) -> Network:
    return network_create(name="beta")[0]


@pytest.fixture
def make_actor(db) -> ActorFactory:
    """make_actor(network, role) -> an ntok actor; make_actor(user="bob", memberships={net: role}) -> utok."""

    def make(network: Network | None = None, role: str = "member", *, user: str | None = None, memberships=None):
        if user is None:
            _, raw = token_create(network=network, role=role, name=f"{role}-token")
        else:
            account = user_get_or_create(username=user)
            for member_network, member_role in (memberships or {}).items():
                membership_set(user=account, network=member_network, role=member_role)
            _, raw = token_create(user=account)
        return token_authenticate(raw=raw)

    return make


@pytest.fixture
def agent(make_actor, network) -> Actor:
    return make_actor(network, "member")


@pytest.fixture
def viewer(make_actor, network) -> Actor:
    return make_actor(network, "viewer")


@pytest.fixture
def outsider(make_actor, other_network) -> Actor:
    """A member of another network: must never see or touch anything of `network`."""
    return make_actor(other_network, "member")


@pytest.fixture
def online(agent) -> Callable[..., dict]:
    """online("coder", status="idle", **fields): the alias reports in, as an agent would."""

    def report(alias: str, status: str = "idle", actor: Actor | None = None, **fields) -> dict:
        fields.setdefault("resume_id", f"resume-{alias}")
        return session_report(actor=actor or agent, alias=alias, status=status, **fields)

    return report


@pytest.fixture
def published() -> Iterator[list[HubEvent]]:
    """Events pushed after commit (tests wrap the call in django_capture_on_commit_callbacks)."""
    seen: list[HubEvent] = []

    def receive(sender, event: HubEvent, **kwargs) -> None:
        seen.append(event)

    hub_event.connect(receive, weak=False)
    yield seen
    hub_event.disconnect(receive)


def on_postgres() -> bool:
    return connection.vendor == "postgresql"
