"""Settings come from the environment; a bad value stops start-up with a message naming it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT

# Each case starts Django in a subprocess (about a second): CI runs them, the fast loop does not.
pytestmark = pytest.mark.slow


def run_check(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "commhub.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("variable", "value", "complaint"),
    [
        ("COMMHUB_OFFLINE_AFTER_SECONDS", "ten", "COMMHUB_OFFLINE_AFTER_SECONDS must be a whole number"),
        ("COMMHUB_OFFLINE_AFTER_SECONDS", "0", "COMMHUB_OFFLINE_AFTER_SECONDS must be at least 1"),
        ("COMMHUB_DEFAULT_TTL_SECONDS", "90000", "at most 86400"),
        ("COMMHUB_ACTOR_CACHE_SECONDS", "x", "COMMHUB_ACTOR_CACHE_SECONDS must be a whole number"),
        ("COMMHUB_ACTOR_CACHE_SECONDS", "-1", "COMMHUB_ACTOR_CACHE_SECONDS must be at least 0"),
        ("DATABASE_URL", "nosuchdb://x", "DATABASE_URL is not a usable database URL"),
        ("COMMHUB_WRITE_RATE_LIMIT", "lots", "COMMHUB_WRITE_RATE_LIMIT must read like"),
        ("COMMHUB_WRITE_RATE_LIMIT", "600/fortnight", "COMMHUB_WRITE_RATE_LIMIT must read like"),
        ("COMMHUB_WRITE_RATE_LIMIT", "0/minute", "COMMHUB_WRITE_RATE_LIMIT must read like"),
        ("COMMHUB_WRITE_RATE_LIMIT", "600/minute;1/second", "COMMHUB_WRITE_RATE_LIMIT must read like"),
        ("COMMHUB_RATE_LIMIT_STORAGE", "nosuch://x", "COMMHUB_RATE_LIMIT_STORAGE must be a storage URI"),
        ("COMMHUB_LOGIN_FAILURE_LIMIT", "ten", "COMMHUB_LOGIN_FAILURE_LIMIT must read like"),
        ("COMMHUB_LOGIN_FAILURE_LIMIT", "0/minute", "COMMHUB_LOGIN_FAILURE_LIMIT must read like"),
        ("COMMHUB_LOGIN_ADDRESS_FAILURE_LIMIT", "10/15fortnight", "COMMHUB_LOGIN_ADDRESS_FAILURE_LIMIT must read like"),
        ("COMMHUB_PROFILE", "staging", "COMMHUB_PROFILE must be"),
    ],
)
def test_bad_setting_stops_start_up_naming_it(variable, value, complaint):
    result = run_check(**{variable: value})

    assert result.returncode != 0
    assert complaint in result.stderr


@pytest.mark.parametrize("value", ["off", "20/second", "600/minute"])
def test_write_rate_limit_accepts_off_and_the_limits_notation(value):
    result = run_check(COMMHUB_WRITE_RATE_LIMIT=value)

    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("COMMHUB_LOGIN_FAILURE_LIMIT", "5/hour"),
        ("COMMHUB_LOGIN_FAILURE_LIMIT", "off"),
        ("COMMHUB_LOGIN_ADDRESS_FAILURE_LIMIT", "30/15minute"),
    ],
)
def test_login_failure_limits_accept_off_and_the_limits_notation(variable, value):
    result = run_check(**{variable: value})

    assert result.returncode == 0, result.stderr


def test_embedded_default_is_sqlite_in_wal_mode_with_immediate_transactions(settings):
    if "DATABASE_URL" in os.environ:
        pytest.skip("runs on the embedded default only")
    options = settings.DATABASES["default"]["OPTIONS"]
    assert settings.DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"
    assert "journal_mode=WAL" in options["init_command"]
    assert options["transaction_mode"] == "IMMEDIATE"
    assert settings.CHANNEL_LAYERS["default"]["BACKEND"] == "channels.layers.InMemoryChannelLayer"


def test_redis_url_switches_the_channel_layer_to_redis():
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from django.conf import settings; print(settings.CHANNEL_LAYERS['default']['BACKEND'])",
        ],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "commhub.settings", "REDIS_URL": "redis://127.0.0.1:6379/0"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip() == "channels_redis.pubsub.RedisPubSubChannelLayer", result.stderr
