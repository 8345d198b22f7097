"""Failed-login limits for every password login (the dashboard's /login/, the admin's, any later one).

The guard sits in the authentication backend, the one place every login passes through
(`django.contrib.auth.authenticate`): while a username or a client address has used up its
failures (COMMHUB_LOGIN_FAILURE_LIMIT, COMMHUB_LOGIN_ADDRESS_FAILURE_LIMIT), it refuses before
checking the password, so even the right one is refused. Failures are counted from Django's
`user_login_failed` signal, sent once when every backend has said no (a success never counts).
The counts live in hub_core.ratelimit's store (Redis when REDIS_URL is set: shared by every process).

The refusal is a HubError("login_locked", status=429, retry_after=N); the login forms (the admin's
below, the dashboard's in hub_dashboard.forms, both through LockoutMessage) turn it into a form error
naming the wait. Each lockout writes an audit row (no network: superusers read it in the admin).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.signals import user_login_failed
from django.db import transaction
from django.dispatch import receiver
from django.http import HttpRequest

from hub_agents.audit import audit_record
from hub_agents.models import AuditEntry
from hub_core import ratelimit
from hub_core.errors import HubError
from hub_core.formats import duration
from hub_dashboard.forms import LockoutMessage


def _keys(request: HttpRequest | None, username: str | None) -> dict[str, str]:
    """Who a login attempt is counted against. The address is the peer the server saw (REMOTE_ADDR):
    behind a proxy the server's own proxy-header handling (uvicorn's FORWARDED_ALLOW_IPS, daphne's
    --proxy-headers) puts the client's there; a header the client sets itself is never trusted here."""
    keys = {}
    if username:
        # A digest: the count's key neither holds what was typed (a password typed as the
        # username) nor grows with it; case-folded, as "Alice" and "alice" are one guess apart.
        keys["username"] = hashlib.sha256(username.strip().casefold().encode()).hexdigest()[:32]
    address = request.META.get("REMOTE_ADDR") if request is not None else None
    if address:
        keys["address"] = address
    return keys


def _locked(lock: ratelimit.LoginLock) -> HubError:
    who = "this username" if lock.scope == "username" else "your address"
    # retry_after counts from the oldest failure, so it is rarely a round number ("851 seconds"):
    # past a minute and a half it is named in whole minutes, rounded up so the wait named is never
    # shorter than the real one.
    wait = lock.retry_after if lock.retry_after < 90 else math.ceil(lock.retry_after / 60) * 60
    return HubError(
        "login_locked",
        f"Too many failed logins for {who} ({lock.limit.amount} in {duration(lock.limit.get_expiry())}). "
        f"Wait {duration(wait)} and try again.",
        status=429,
        retry_after=lock.retry_after,
        scope=lock.scope,
    )


class GuardedModelBackend(ModelBackend):
    """Django's username-and-password backend, refusing while the attempt's failures are used up."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> AbstractBaseUser | None:
        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        lock = ratelimit.login_lock(_keys(request, username))
        if lock is not None:
            # Not PermissionDenied: that would read as a wrong password, with no wait to name.
            raise _locked(lock)
        return super().authenticate(request, username=username, password=password, **kwargs)

    async def aauthenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> AbstractBaseUser | None:
        # ModelBackend's own async version would skip the guard; the sync one, on a thread, keeps it.
        return await sync_to_async(self.authenticate)(request, username=username, password=password, **kwargs)


@receiver(user_login_failed, dispatch_uid="commhub.login_guard.count_failure")
def _count_failure(sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **_: Any) -> None:
    username = credentials.get(get_user_model().USERNAME_FIELD, credentials.get("username"))
    for lock in ratelimit.login_failure_count(_keys(request, username)):
        login_lockout_audit(lock=lock, request=request, username=username or "")


@transaction.atomic
def login_lockout_audit(*, lock: ratelimit.LoginLock, request: HttpRequest | None, username: str) -> AuditEntry:
    address = (request.META.get("REMOTE_ADDR") if request is not None else None) or "unknown"
    # For an address lockout the username stays out: the guesses spread over many names, and the
    # last one typed may be a password typed into the wrong field.
    target = f"username:{username}" if lock.scope == "username" else f"address:{address}"
    return audit_record(
        network_id="",
        action=AuditEntry.Action.LOGIN_LOCKED,
        actor=f"address:{address}",
        target=target,
        scope=lock.scope,
        failures=lock.limit.amount,
        window_seconds=lock.limit.get_expiry(),
        locked_for_seconds=lock.retry_after,
    )


class AdminLoginForm(LockoutMessage, AdminAuthenticationForm):
    """The admin's login form (staff only, as Django's)."""
