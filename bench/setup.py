"""The benchmark's database: created afresh, migrated, and given a network, tokens and agents."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

import psycopg

from bench.server import ROOT

DATABASE = "commhub_bench"
DATABASE_URL = f"postgres://postgres@127.0.0.1:5432/{DATABASE}"
REDIS_URL = "redis://127.0.0.1:6379/9"
SERVER_ENV = {
    "DJANGO_SETTINGS_MODULE": "bench.settings",
    "DATABASE_URL": DATABASE_URL,
    "REDIS_URL": REDIS_URL,
    # The limiter runs (its Redis round trip is part of every write) but never refuses the load.
    "COMMHUB_WRITE_RATE_LIMIT": "100000000/minute",
    "LOG_LEVEL": "WARNING",
}


@dataclass
class Fleet:
    network_id: str
    agent_tokens: list[str]  # network tokens, one per simulated agent
    operator_token: str


def recreate_database() -> None:
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {DATABASE}")
    manage("migrate", "--verbosity", "0")


def manage(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**os.environ, **SERVER_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""


def django_setup() -> None:
    """This process reads and preloads the database through the ORM, as a separate client."""
    os.environ.update(SERVER_ENV)
    # The ORM is used between measurements, from this script's event loop, never while it runs load.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    import django

    django.setup()


def fleet(agents: int) -> Fleet:
    from hub_agents.services import network_create, token_create

    network, _ = network_create(name="bench", by="bench")
    tokens = [token_create(network=network, name=f"agent-{n}", by="bench")[1] for n in range(agents)]
    operator = token_create(network=network, name="operator", role="admin", by="bench")[1]
    return Fleet(network.pk, tokens, operator)
