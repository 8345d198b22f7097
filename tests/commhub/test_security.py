"""Security headers, CSRF on the dashboard, the production profile, and tokens kept out of logs."""

from __future__ import annotations

import logging
import os
import re
import secrets
import subprocess
import sys

import pytest
from django.test import Client
from django.urls import reverse

from commhub.security import RedactTokens
from hub_agents.services import membership_set, token_create
from hub_tasks.models import Task
from tests.helpers import ROOT

PRODUCTION = {
    "COMMHUB_PROFILE": "production",
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "hub.example.com",
}


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {key: value for key, value in os.environ.items() if key not in ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS")}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "commhub.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def setting(name: str, **env: str) -> str:
    result = manage("shell", "-c", f"from django.conf import settings; print(settings.{name})", **env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


@pytest.mark.slow  # a subprocess
def test_check_deploy_passes_with_the_production_profile():
    result = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)

    assert result.returncode == 0, result.stderr + result.stdout


@pytest.mark.slow  # a subprocess
def test_check_deploy_fails_without_it():
    result = manage("check", "--deploy", "--fail-level", "WARNING", SECRET_KEY=PRODUCTION["SECRET_KEY"])

    assert result.returncode != 0
    assert "security.W012" in result.stderr  # session cookie not Secure on plain HTTP


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_SSL_REDIRECT"])
def test_production_profile_makes_cookies_secure_and_redirects_to_https(name):
    assert setting(name, **PRODUCTION) == "True"
    assert setting(name) == "False"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("missing", "complaint"),
    [
        ("SECRET_KEY", "SECRET_KEY must be set"),
        ("ALLOWED_HOSTS", "ALLOWED_HOSTS must name the host names"),
    ],
)
def test_production_profile_refuses_to_start_without_its_secret_or_hosts(missing, complaint):
    env = {key: value for key, value in PRODUCTION.items() if key != missing}

    result = manage("check", **env)

    assert result.returncode != 0
    assert complaint in result.stderr


@pytest.mark.slow
def test_production_profile_refuses_debug():
    result = manage("check", **PRODUCTION, DEBUG="true")

    assert result.returncode != 0
    assert "DEBUG must be off" in result.stderr


@pytest.mark.parametrize("path", ["/login/", "/api/v1/docs", "/healthz", "/api/v1/sessions"])
def test_every_response_carries_the_security_headers(client: Client, db, path: str):
    response = client.get(path)

    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy


def _inline_scripts(html: str) -> list[str]:
    """Script the CSP would block: <script> without src, and on…= handler attributes."""
    blocks = [tag for tag in re.findall(r"<script\b[^>]*>", html) if "src=" not in tag]
    handlers = re.findall(r"<[^>]+\son[a-z]+\s*=", html)
    return blocks + handlers


def test_pages_run_no_inline_script_so_the_policy_blocks_nothing_of_ours(client: Client, network, django_user_model):
    operator = django_user_model.objects.create_user("operator", password="x")
    membership_set(user=operator, network=network, role="owner")
    client.force_login(operator)
    pages = ["dashboard:fleet", "dashboard:tasks", "dashboard:completions", "dashboard:dispatch", "dashboard:audit"]

    for name in pages:
        response = client.get(reverse(name))
        assert response.status_code == 200, name
        assert _inline_scripts(response.content.decode()) == [], name
    docs = client.get("/api/v1/docs")
    assert _inline_scripts(docs.content.decode()) == []


def test_dashboard_forms_refuse_a_post_without_the_csrf_token(network, django_user_model):
    operator = django_user_model.objects.create_user("operator", password="x")
    membership_set(user=operator, network=network, role="owner")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(operator)

    refused = browser.post(reverse("dashboard:dispatch"), {"alias": "coder", "task": "forged"})

    assert refused.status_code == 403
    assert not Task.objects.filter(content="forged").exists()


def test_tokens_are_redacted_from_log_lines_and_tracebacks(network, caplog):
    _, raw = token_create(network=network, name="logged")
    logger = logging.getLogger("commhub.test")
    logger.addFilter(RedactTokens())
    try:
        with caplog.at_level(logging.INFO, logger="commhub.test"):
            logger.info("called with %s", raw)
            try:
                raise ValueError(f"bad token {raw}")
            except ValueError:
                logger.exception("refused")
    finally:
        logger.filters.clear()

    text = "\n".join(record.getMessage() + (record.exc_text or "") for record in caplog.records)
    assert raw not in text
    assert raw[5:] not in text
    assert "ntok_[redacted]" in text


def test_the_configured_console_handler_redacts_tokens(settings):
    handler = settings.LOGGING["handlers"]["console"]

    assert "redact_tokens" in handler["filters"]
    assert settings.LOGGING["filters"]["redact_tokens"]["()"] == "commhub.security.RedactTokens"
