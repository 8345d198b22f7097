"""Token → actor remembered per process (issue 15): a token read once is answered without the
database, and every change of access is seen at once by the process that made it.

These tests keep time still (freezegun also stops time.monotonic), so no periodic check of the
shared access generation runs between two calls: what they show is this process's own forgetting.
Other processes learning of a change: test_actor_cache_processes.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import connection
from django.test.utils import CaptureQueriesContext
from freezegun import freeze_time

from hub_agents.models import ApiToken, Network
from hub_agents.services import (
    membership_remove,
    membership_set,
    network_create,
    network_delete,
    token_authenticate,
    token_create,
    token_revoke,
    user_get_or_create,
)
from hub_tasks.models import Task
from tests.helpers import refused
from tests.helpers.calls import send_task


@dataclass
class World:
    network: Network
    carol: AbstractBaseUser
    network_token: ApiToken
    network_raw: str
    user_token: ApiToken
    user_raw: str
    other_network_id: str = ""


@pytest.fixture
def world(network) -> World:
    carol = user_get_or_create(username="carol")
    membership_set(user=carol, network=network, role="member")
    network_token, network_raw = token_create(network=network, role="member", name="ci")
    user_token, user_raw = token_create(user=carol, name="laptop")
    return World(network, carol, network_token, network_raw, user_token, user_raw)


def test_a_token_read_once_is_answered_without_the_database(world, django_assert_num_queries):
    with freeze_time("2026-04-12T10:00:00Z"):
        first = token_authenticate(raw=world.user_raw)
        with django_assert_num_queries(0):
            again = token_authenticate(raw=world.user_raw)

    assert again == first
    assert (dict(again.roles), again.key) == ({world.network.pk: "member"}, f"token:{world.user_token.pk}")


def token_statements(call: Callable[[], Any]) -> list[str]:
    """The SQL statements `call` sends about tokens (not the periodic read of the shared generation,
    which a tick of the clock lets run, and which is no query at all where it lives in Redis)."""
    with CaptureQueriesContext(connection) as captured:
        call()
    return [query["sql"].split()[0] for query in captured.captured_queries if ApiToken._meta.db_table in query["sql"]]


def test_last_use_is_still_recorded_once_a_minute(world, settings):
    settings.COMMHUB_ACTOR_CACHE_SECONDS = 3600  # remembered across the whole test
    with freeze_time("2026-04-12T10:00:00Z") as clock:
        token_authenticate(raw=world.network_raw)
        first = ApiToken.objects.get(pk=world.network_token.pk).last_used_at
        clock.tick(30)
        # Used again within the minute: nothing to record; then the minute is over: the one write.
        within_the_minute = token_statements(lambda: token_authenticate(raw=world.network_raw))
        clock.tick(60)
        after_the_minute = token_statements(lambda: token_authenticate(raw=world.network_raw))

    assert (within_the_minute, after_the_minute) == ([], ["UPDATE"])
    assert ApiToken.objects.get(pk=world.network_token.pk).last_used_at == first + timedelta(seconds=90)


def test_zero_reads_the_token_on_every_request(world, settings, django_assert_num_queries):
    settings.COMMHUB_ACTOR_CACHE_SECONDS = 0
    with freeze_time("2026-04-12T10:00:00Z"):
        token_authenticate(raw=world.network_raw)
        with django_assert_num_queries(1):
            token_authenticate(raw=world.network_raw)


def test_without_a_generation_other_processes_see_nothing_is_remembered(world, settings, django_assert_num_queries):
    if connection.vendor == "sqlite":
        pytest.skip("on SQLite the generation lives in the database file, which every process shares")
    settings.REDIS_URL = ""  # PostgreSQL alone: no process could tell another of a change
    with freeze_time("2026-04-12T10:00:00Z"):
        token_authenticate(raw=world.network_raw)
        with django_assert_num_queries(1):
            token_authenticate(raw=world.network_raw)


def test_an_unknown_token_is_read_every_time(world, django_assert_num_queries):
    with freeze_time("2026-04-12T10:00:00Z"):
        refused(token_authenticate, raw="ntok_not-a-real-token")
        with django_assert_num_queries(1):
            assert refused(token_authenticate, raw="ntok_not-a-real-token").code == "unauthorized"


# --- every change of access, seen at once by the process that made it ------------------------------


def deactivate(user: AbstractBaseUser) -> None:
    user.is_active = False
    user.save()  # as the admin's user page and a shell do


def join_another_network(world: World) -> None:
    other, _ = network_create(name="gamma")
    membership_set(user=world.carol, network=other, role="viewer")
    world.other_network_id = other.pk


# (which token, the change, what the token stands for afterwards: its roles, or None if refused)
CHANGES: dict[str, tuple[str, Callable[[World], Any], Callable[[World], dict[str, str] | None]]] = {
    "token revoked": ("network", lambda w: token_revoke(token=w.network_token), lambda w: None),
    "user token revoked": ("user", lambda w: token_revoke(token=w.user_token), lambda w: None),
    "role changed": (
        "user",
        lambda w: membership_set(user=w.carol, network=w.network, role="viewer"),
        lambda w: {w.network.pk: "viewer"},
    ),
    "member removed": ("user", lambda w: membership_remove(user=w.carol, network=w.network, by="test"), lambda w: {}),
    "member added elsewhere": (
        "user",
        join_another_network,
        lambda w: {w.network.pk: "member", w.other_network_id: "viewer"},
    ),
    "user deactivated": ("user", lambda w: deactivate(w.carol), lambda w: None),
    "user deleted": ("user", lambda w: w.carol.delete(), lambda w: None),
    "network deleted": ("network", lambda w: network_delete(network=w.network, by="test"), lambda w: None),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_the_process_that_changes_access_sees_it_at_once(world, change):
    which, make_change, expected = CHANGES[change]
    raw = world.network_raw if which == "network" else world.user_raw
    with freeze_time("2026-04-12T10:00:00Z"):
        before = token_authenticate(raw=raw)
        make_change(world)
        after = expected(world)
        if after is None:
            assert refused(token_authenticate, raw=raw).code == "unauthorized"
        else:
            assert dict(token_authenticate(raw=raw).roles) == after
    assert dict(before.roles) == {world.network.pk: "member"}


def network_statements(call: Callable[[], Any]) -> int:
    """How many statements `call` sends that read the networks table."""
    with CaptureQueriesContext(connection) as captured:
        call()
    return sum(Network._meta.db_table in query["sql"] for query in captured.captured_queries)


def test_the_networks_default_lease_is_remembered_until_the_network_changes(world):
    actor = token_authenticate(raw=world.network_raw)

    def lease_of_a_send() -> int | None:
        sent = send_task(actor=actor, alias="coder", task="lint")
        return Task.objects.get(pk=sent["task_id"]).lease_seconds

    with freeze_time("2026-04-12T10:00:00Z"):
        assert lease_of_a_send() is None
        assert network_statements(lease_of_a_send) == 0  # a send reads no network row once remembered
        world.network.default_lease_seconds = 45
        world.network.save()  # the admin's change: this process forgets at once

        assert lease_of_a_send() == 45
        assert network_statements(lease_of_a_send) == 0
