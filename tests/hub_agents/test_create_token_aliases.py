"""`manage.py create_token --alias`: a token bound to the agents it may act as, said on the way out."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from hub_agents.models import ApiToken, AuditEntry, IdentityPolicy
from hub_agents.services import network_policy_set, token_authenticate


def run(*args: str) -> tuple[str, str]:
    """(the raw token, what the command told the operator on stderr)."""
    out, err = StringIO(), StringIO()
    call_command("create_token", *args, stdout=out, stderr=err)
    return out.getvalue().strip().splitlines()[-1], err.getvalue()


def test_aliases_repeated_and_listed_with_commas_bind_the_token(network):
    raw, said = run("--network", network.name, "--name", "box", "--alias", "a-coder", "--alias", "build-*, reviewer")

    token = ApiToken.objects.get(digest=ApiToken.digest_of(raw))
    assert token.aliases == ["a-coder", "build-*", "reviewer"]
    assert token_authenticate(raw=raw).aliases == ("a-coder", "build-*", "reviewer")
    assert "bound to a-coder, build-*, reviewer" in said
    entry = AuditEntry.objects.get(action=AuditEntry.Action.TOKEN_CREATED)
    assert (entry.actor, entry.detail["aliases"]) == ("cli:manage.py", ["a-coder", "build-*", "reviewer"])


def test_a_user_token_is_bound_too(network):
    raw, said = run("--user", "alice", "--network", network.name, "--alias", "alice-agent")

    assert token_authenticate(raw=raw).aliases == ("alice-agent",)
    assert "bound to alice-agent" in said


def test_without_alias_the_token_is_unbound_and_says_so(network):
    raw, said = run("--network", network.name)

    assert token_authenticate(raw=raw).aliases == ()
    assert "unbound" in said and "strict" not in said


def test_an_unbound_token_of_a_strict_network_is_warned_about(network):
    network_policy_set(network=network, policy=IdentityPolicy.STRICT, by="test")

    _, said = run("--network", network.name)
    _, bound = run("--network", network.name, "--alias", "a-coder")

    assert "is strict: an unbound token acts as no agent there" in said
    assert "strict" not in bound


@pytest.mark.parametrize("alias", ["*", "**", "x" * 201])
def test_a_refused_binding_is_a_command_error_that_makes_nothing(network, alias):
    with pytest.raises(CommandError, match=r"^--alias "):
        run("--user", "bob", "--network", network.name, "--alias", alias)

    assert not ApiToken.objects.exists()
    assert not get_user_model().objects.filter(username="bob").exists()  # checked before the user is made
