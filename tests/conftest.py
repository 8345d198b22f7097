"""Shared fixtures: two networks, and actors of every kind built from real tokens."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import pytest
from django.db.models import Max, Q
from freezegun import freeze_time
from freezegun.api import FrozenDateTimeFactory

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
from hub_core.events import EventType, HubEvent, outbox_close
from hub_events.models import OPERATORS, Event
from tests.helpers import NOW, hostile
from tests.helpers.calls import report_status
from tests.helpers.webhooks import Receiver

# Fixtures for every package (live hubs) and the markers `make test-fast` filters on; helpers that are
# not fixtures live in tests/helpers/. No test module or conftest imports another.
pytest_plugins = ["tests.plugins.live_hub", "tests.plugins.markers", "tests.plugins.pool", "tests.plugins.speed"]

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
def unlimited(settings) -> None:
    """No write limit: for tests writing far more than the 600 a minute one token may (fuzzers, a
    thousand posts)."""
    settings.COMMHUB_WRITE_RATE_LIMIT = "off"
    ratelimit.reset()


@pytest.fixture
def network(db) -> Network:
    return network_create(name="alpha")[0]


@pytest.fixture
def other_network(db) -> Network:
    return network_create(name="beta")[0]


@pytest.fixture
def hostile_world(network: Network, other_network: Network, unlimited: None) -> hostile.World:
    """What the fuzzers of MCP and REST input aim at (tests.helpers.hostile.make_world), with no
    write limit."""
    return hostile.make_world(network, other_network)


@pytest.fixture
def allow_private(settings) -> None:
    """Webhooks may reach private addresses, 127.0.0.1 among them (COMMHUB_WEBHOOKS_ALLOW_PRIVATE)."""
    settings.COMMHUB_WEBHOOKS_ALLOW_PRIVATE = True


@pytest.fixture
def receiver(allow_private: None) -> Iterator[Receiver]:
    """A webhook receiver on 127.0.0.1 (tests.helpers.webhooks), which webhooks may reach."""
    got = Receiver()
    yield got
    got.stop()


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
def owner(make_actor, network) -> Actor:
    return make_actor(network, "owner")


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
        return report_status(actor=actor or agent, alias=alias, status=status, **fields)

    return report


class Published(Sequence[HubEvent]):
    """The events a test's `django_capture_on_commit_callbacks` blocks published and delivered, read
    back from the event log: an event's rows are written in its transaction and sealed when it is
    delivered, so the operators' sealed copies written inside a block are what the block pushed."""

    def __init__(self) -> None:
        self.windows: list[tuple[int, int]] = []  # (after, upto]: the event ids each block wrote

    def _events(self) -> list[HubEvent]:
        inside = Q(pk__in=[])
        for after, upto in self.windows:
            inside |= Q(id__gt=after, id__lte=upto)
        rows = Event.objects.filter(inside, audience=OPERATORS, seq__isnull=False).order_by("seq", "id")
        return [
            HubEvent(type=EventType(row.type), network_id=row.network_id, audience=tuple(row.to), payload=row.payload)
            for row in rows
        ]

    def __getitem__(self, index):  # type: ignore[override]
        return self._events()[index]

    def __len__(self) -> int:
        return len(self._events())

    def __iter__(self) -> Iterator[HubEvent]:
        return iter(self._events())

    def __eq__(self, other: object) -> bool:
        return self._events() == list(other) if isinstance(other, Sequence) else NotImplemented

    def __repr__(self) -> str:
        return repr(self._events())

    def clear(self) -> None:
        """Forget what was delivered so far."""
        self.windows.clear()


def _newest_event_id() -> int:
    return Event.objects.aggregate(last=Max("id"))["last"] or 0


@pytest.fixture
def published(db) -> Published:
    """Events pushed after commit (tests wrap the call in django_capture_on_commit_callbacks)."""
    return Published()


@pytest.fixture
def django_capture_on_commit_callbacks(django_capture_on_commit_callbacks, request):
    """pytest-django's fixture, each block a transaction of its own as the services would commit it
    (a fresh outbox, so it captures its own delivery), noting for `published` the events it wrote."""
    published: Published | None = request.getfixturevalue("published") if "published" in request.fixturenames else None

    @contextmanager
    def capture(**kwargs):
        after = _newest_event_id() if published is not None else 0
        outbox_close()
        with django_capture_on_commit_callbacks(**kwargs) as callbacks:
            try:
                yield callbacks
            finally:
                outbox_close()
                if published is not None:
                    published.windows.append((after, _newest_event_id()))

    return capture


@pytest.fixture
def clock() -> Iterator[FrozenDateTimeFactory]:
    """Time stands still at NOW until the test moves it with clock.tick(seconds)."""
    with freeze_time(NOW) as frozen:
        yield frozen
