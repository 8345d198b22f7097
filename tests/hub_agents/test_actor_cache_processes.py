"""A change of access reaches every other hub process within a second (issue 15), though each
remembers what a token stands for.

Hub processes (real daphne servers) answer a token, and so remember it; this test process then
changes access through a service, as the admin, the dashboard and the CLI do, and each hub must
refuse within 1 s. That is the issue's correctness bound, not a benchmark. The processes share the
access generation through Redis on PostgreSQL (CI's second run), through the SQLite file's header
on the embedded default; PostgreSQL without Redis shares none, and its hubs read every token.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from hub_agents.services import (
    membership_remove,
    membership_set,
    network_delete,
    token_create,
    token_revoke,
    user_get_or_create,
)
from tests.helpers.live import Hub

pytestmark = pytest.mark.django_db(transaction=True)

WITHIN = 1.0  # seconds: the bound


def read(hub: Hub, raw: str, network_id: str) -> int:
    """A read of the network (its sessions): the status it answers."""
    headers = {"Authorization": f"Bearer {raw}"}
    return httpx.get(f"{hub.url}/api/v1/sessions", params={"network_id": network_id}, headers=headers).status_code


def write(hub: Hub, raw: str, network_id: str) -> int:
    """A write to the network (send_task): the status it answers."""
    body = {"alias": "coder", "task": "probe", "network_id": network_id}
    return httpx.post(f"{hub.url}/api/v1/tasks", json=body, headers={"Authorization": f"Bearer {raw}"}).status_code


def answered_within(call: Callable[[], int], wanted: int, since: float) -> list[int]:
    """Call until it answers `wanted`, while less than WITHIN has passed `since`; every answer."""
    answers = [call()]
    while answers[-1] != wanted and time.monotonic() - since < WITHIN:
        time.sleep(0.02)
        answers.append(call())
    return answers


def test_a_revoked_token_is_refused_by_every_other_process_within_a_second(hub_server, network):
    token, raw = token_create(network=network, role="member", name="agent")
    hubs = [hub_server(), hub_server()]
    for hub in hubs:
        for _ in range(3):  # answered, and so remembered, by each
            assert read(hub, raw, network.pk) == 200

    token_revoke(token=token, by="test")
    revoked = time.monotonic()

    for hub in hubs:
        answers = answered_within(lambda hub=hub: read(hub, raw, network.pk), 401, since=revoked)
        assert answers[-1] == 401, f"{hub.url} still answered {answers} {WITHIN} s after the revoke"
        assert read(hub, raw, network.pk) == 401  # and it stays refused


def test_a_role_change_reaches_every_other_process_within_a_second(hub_server, network):
    carol = user_get_or_create(username="carol")
    membership_set(user=carol, network=network, role="member")
    _, raw = token_create(user=carol, name="laptop")
    hubs = [hub_server(), hub_server()]
    for hub in hubs:
        assert write(hub, raw, network.pk) == 201

    membership_set(user=carol, network=network, role="viewer", by="test")
    changed = time.monotonic()
    for hub in hubs:
        answers = answered_within(lambda hub=hub: write(hub, raw, network.pk), 403, since=changed)
        assert answers[-1] == 403, f"{hub.url} still answered {answers} {WITHIN} s after member → viewer"
        assert read(hub, raw, network.pk) == 200  # a viewer still reads

    # And back: a role given is seen as soon as one taken away.
    membership_set(user=carol, network=network, role="member", by="test")
    changed = time.monotonic()
    for hub in hubs:
        answers = answered_within(lambda hub=hub: write(hub, raw, network.pk), 201, since=changed)
        assert answers[-1] == 201, f"{hub.url} still answered {answers} {WITHIN} s after viewer → member"


def deactivate(carol: Any) -> None:
    carol.is_active = False
    carol.save()  # as the admin's user page and a shell do


@pytest.mark.parametrize(
    ("change", "user_token", "network_token"),
    [
        pytest.param(
            lambda carol, network: membership_remove(user=carol, network=network, by="test"), 403, 200, id="removed"
        ),
        pytest.param(lambda carol, network: deactivate(carol), 401, 200, id="deactivated"),
        pytest.param(lambda carol, network: carol.delete(), 401, 200, id="user deleted"),
        pytest.param(lambda carol, network: network_delete(network=network, by="test"), 403, 401, id="network deleted"),
    ],
)
def test_every_loss_of_access_reaches_another_process_within_a_second(
    hub_server, network, change, user_token, network_token
):
    carol = user_get_or_create(username="carol")
    membership_set(user=carol, network=network, role="member")
    _, user_raw = token_create(user=carol, name="laptop")
    _, network_raw = token_create(network=network, role="member", name="agent")
    hub = hub_server()
    assert (read(hub, user_raw, network.pk), read(hub, network_raw, network.pk)) == (200, 200)

    network_id = network.pk
    change(carol, network)
    changed = time.monotonic()

    answers = answered_within(lambda: read(hub, user_raw, network_id), user_token, since=changed)
    assert answers[-1] == user_token, f"still answered {answers} {WITHIN} s after the change"
    # The network token: untouched by what happens to a user, gone with its network.
    assert read(hub, network_raw, network_id) == network_token
