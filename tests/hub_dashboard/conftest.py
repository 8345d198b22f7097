"""Dashboard fixtures: `login(role, username)` → a test client signed in as a member of `network`."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client

from hub_agents.services import membership_set


@pytest.fixture
def login(django_user_model, network) -> Callable[..., Client]:
    def make(role: str = "owner", username: str = "operator") -> Client:
        user = django_user_model.objects.create_user(username, password="pw")
        membership_set(user=user, network=network, role=role)
        browser = Client()
        browser.force_login(user)
        return browser

    return make
