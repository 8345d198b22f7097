"""The node's token against its config: the binding matcher (the hub's rule, mirrored), the refusals a
node prints at start and on a reload, and GET /api/v1/whoami as the node reads it."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from commhub_agent.hub import Config, Hub, HubRefused, HubUnavailable
from commhub_agent.node.config import describe_error, load_config
from commhub_agent.node.identity import TOKEN_KEY, TokenIdentity, binding_matches, identity_refusals
from commhub_agent.node.supervisor import Node

# --- the matcher ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("binding", "alias", "matches"),
    [
        (["builder"], "builder", True),
        (["builder"], "builder-2", False),  # an alias is the whole alias, not a prefix
        (["builder"], "Builder", False),  # aliases are case-sensitive, as the hub's
        (["build-*"], "build-1", True),
        (["build-*"], "build-", True),  # `*` stands for any text, the empty one too
        (["build-*"], "rebuild-1", False),  # the whole alias must match, not a part of it
        (["*-review"], "code-review", True),
        (["a*b*c"], "a-x-b-y-c", True),
        (["a*b*c"], "a-x-c", False),
        (["a.b"], "axb", False),  # only `*` is special: a dot is a dot
        (["a.b"], "a.b", True),
        (["v[1]"], "v[1]", True),
        (["x+", "y?"], "y?", True),
        (["one", "two-*"], "two-x", True),
        ([], "anything", False),
    ],
)
def test_an_alias_matches_a_binding_as_the_hub_matches_it(binding, alias, matches):
    assert binding_matches(binding, alias) is matches


# --- the refusals --------------------------------------------------------------------------------

AGENT = '[agents.{}]\nruntime = "command"\ncommand = ["true"]\n'


def config(tmp_path: Path, *aliases: str):
    path = tmp_path / "node.toml"
    body = "".join(AGENT.format(json.dumps(alias) if " " in alias else alias) for alias in aliases)
    path.write_text(f'[node]\nhub = "http://hub.test"\nname = "box-1"\nstate_dir = "state"\n{body}')
    return load_config(path, environ={})


def identity(aliases=(), policy="open", role="member") -> TokenIdentity:
    return TokenIdentity.from_answer(
        {
            "ok": True,
            "label": "ntok_AbCd1234 (box-1)",
            "kind": "network",
            "aliases": list(aliases),
            "networks": [{"network_id": "net_1", "name": "alpha", "role": role, "identity_policy": policy}],
        }
    )


def test_a_bound_token_serves_every_agent_its_binding_covers(tmp_path):
    node = config(tmp_path, "builder", "review-1", "review-2")

    assert identity_refusals(identity(["builder", "review-*"], policy="strict"), node) == []
    assert identity_refusals(identity(["builder", "review-*"]), node) == []


def test_each_agent_outside_the_binding_is_refused_by_its_key_with_the_binding(tmp_path):
    node = config(tmp_path, "builder", "a b", "review-1")

    refused = identity_refusals(identity(["review-*"]), node)

    assert [exc.key for exc in refused] == ["agents.builder", 'agents."a b"']
    reason = refused[0].reason
    assert "ntok_AbCd1234 (box-1)" in reason and "acts only as review-*, not as 'builder'" in reason
    # The way out: the token this config needs, made with the hub's command, and every alias in it.
    assert "python manage.py create_token --network alpha --name box-1 --alias 'builder,a b,review-1'" in reason
    assert describe_error(node.path, refused[0]) == f"{node.path}: agents.builder: {reason}"


def test_an_unbound_token_serves_an_open_network_and_is_refused_by_a_strict_one(tmp_path):
    node = config(tmp_path, "builder", "tester")

    assert identity_refusals(identity(), node) == []
    (refused,) = identity_refusals(identity(policy="strict"), node)

    assert refused.key == TOKEN_KEY
    assert refused.reason.startswith("network alpha is strict: only a token bound to an alias acts as it")
    assert "create the node's token with --alias" in refused.reason.lower()
    assert "--alias builder,tester" in refused.reason
    # Not a key of the file: shown without it.
    assert describe_error(node.path, refused) == f"$COMMHUB_TOKEN: {refused.reason}"


def test_a_viewers_token_serves_no_agent(tmp_path):
    (refused,) = identity_refusals(identity(["builder"], role="viewer"), config(tmp_path, "builder"))

    assert refused.key == TOKEN_KEY and "viewer acts as no agent" in refused.reason


def test_a_hub_that_did_not_say_refuses_nothing(tmp_path):
    assert identity_refusals(None, config(tmp_path, "builder")) == []


# --- whoami as the node reads it ------------------------------------------------------------------


def answering(*replies: httpx.Response | Any) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    """A hub answering /api/v1/whoami with each reply in turn (a callable is called first), the last for good."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        reply = replies[min(len(seen), len(replies)) - 1]
        return reply() if callable(reply) else reply

    return httpx.MockTransport(handler), seen


def whoami(transport: httpx.MockTransport) -> Any:
    async def ask() -> Any:
        hub = Hub(Config(hub="http://hub.test/prefix", token="ntok_x", alias="box"), transport=transport)
        try:
            return await hub.whoami()
        finally:
            await hub.aclose()

    return anyio.run(ask)


ANSWER = {"ok": True, "label": "ntok_x (box)", "kind": "network", "names": [], "aliases": ["a"], "networks": []}


def test_whoami_is_a_get_with_the_token_under_the_hubs_url():
    transport, seen = answering(httpx.Response(200, json=ANSWER))

    assert whoami(transport) == ANSWER
    assert (seen[0].method, str(seen[0].url)) == ("GET", "http://hub.test/prefix/api/v1/whoami")
    assert seen[0].headers["Authorization"] == "Bearer ntok_x"


def test_a_hub_without_whoami_answers_none():
    assert whoami(answering(httpx.Response(404, json={"ok": False, "error": "not_found", "message": "no"}))[0]) is None


@pytest.mark.parametrize("reply", [httpx.Response(502, text="bad gateway"), httpx.Response(200, text="<html>")])
def test_an_unavailable_hub_is_retryable(reply):
    with pytest.raises(HubUnavailable):
        whoami(answering(reply)[0])


def test_a_refused_token_is_a_refusal():
    refusal = {"ok": False, "error": "unauthorized", "message": "The bearer token is unknown or revoked."}

    with pytest.raises(HubRefused) as caught:
        whoami(answering(httpx.Response(401, json=refusal))[0])

    assert caught.value.result["error"] == "unauthorized"
    assert "unknown or revoked" in str(caught.value)


# --- the node at start and on a reload ------------------------------------------------------------


@pytest.fixture
def no_backoff(monkeypatch):
    async def instant(self) -> None:
        await anyio.sleep(0)

    monkeypatch.setattr("commhub_agent.hub.Backoff.sleep", instant)


def node_with(tmp_path: Path, transport: httpx.MockTransport, *aliases: str) -> Node:
    node = Node(config(tmp_path, *aliases), "ntok_x")
    node.hub = Hub(node.hub.config, transport=transport)
    return node


def admitted(node: Node) -> bool:
    async def ask() -> bool:
        try:
            return await node.admitted()
        finally:
            await node.hub.aclose()

    return anyio.run(ask)


def bound(*aliases: str, policy: str = "open") -> httpx.Response:
    networks = [{"network_id": "net_1", "name": "alpha", "role": "member", "identity_policy": policy}]
    answer = {**ANSWER, "label": "ntok_x (box-1)", "aliases": list(aliases), "networks": networks}
    return httpx.Response(200, json=answer)


def test_a_node_whose_agent_is_outside_its_binding_does_not_start(tmp_path, capsys):
    node = node_with(tmp_path, answering(bound("builder", "review-*"))[0], "builder", "deployer", "review-1")

    assert admitted(node) is False
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == (
        f"commhub-agent node: {node.config.path}: agents.deployer: the node's token (ntok_x (box-1)) acts only "
        "as builder, review-*, not as 'deployer': bind the node's token to every agent of this config (python "
        "manage.py create_token --network alpha --name box-1 --alias builder,deployer,review-1), or remove this agent"
    )
    assert lines[1].startswith("commhub-agent node: not started")
    assert len(lines) == 2


def test_a_node_bound_to_its_agents_starts_in_a_strict_network(tmp_path, capsys):
    node = node_with(tmp_path, answering(bound("builder", "review-*", policy="strict"))[0], "builder", "review-1")

    assert admitted(node) is True
    assert node.token is not None and node.token.aliases == ("builder", "review-*")
    assert capsys.readouterr().err == ""


def test_an_unbound_node_token_in_a_strict_network_does_not_start(tmp_path, capsys):
    node = node_with(tmp_path, answering(bound(policy="strict"))[0], "builder")

    assert admitted(node) is False
    err = capsys.readouterr().err
    assert "commhub-agent node: $COMMHUB_TOKEN: network alpha is strict" in err
    assert "create_token --network alpha --name box-1 --alias builder" in err


def test_a_node_waits_for_the_hub_to_say_who_its_token_is(tmp_path, capsys, no_backoff):
    transport, seen = answering(httpx.Response(503), httpx.Response(503), bound("builder"))
    node = node_with(tmp_path, transport, "builder")

    assert admitted(node) is True
    assert len(seen) == 3
    assert capsys.readouterr().err.count("hub unavailable (whoami: HTTP 503)") == 2


def test_a_hub_older_than_bindings_starts_the_node_unchecked(tmp_path, capsys):
    node = node_with(tmp_path, answering(httpx.Response(404, text="Not Found"))[0], "builder")

    assert admitted(node) is True
    assert node.token is None
    assert "has no /api/v1/whoami" in capsys.readouterr().err


def test_a_token_the_hub_refuses_does_not_start_the_node(tmp_path, capsys):
    refusal = {"ok": False, "error": "unauthorized", "message": "The bearer token is unknown or revoked."}
    node = node_with(tmp_path, answering(httpx.Response(401, json=refusal))[0], "builder")

    assert admitted(node) is False
    assert "$COMMHUB_TOKEN: the hub refused it (unauthorized: The bearer token is unknown" in capsys.readouterr().err


def test_a_sighup_while_the_hub_is_awaited_reads_the_config_again(tmp_path, capsys, no_backoff):
    node: Node | None = None

    def edit_and_hup() -> httpx.Response:
        assert node is not None
        node.config.path.write_text(node.config.path.read_text() + AGENT.format("deployer"))
        os.kill(os.getpid(), signal.SIGHUP)  # the default would end this test's process
        return httpx.Response(503)

    transport, _ = answering(edit_and_hup, bound("builder"))
    node = node_with(tmp_path, transport, "builder")

    assert admitted(node) is False  # the agent added meanwhile is checked, and refused
    assert sorted(node.config.agents) == ["builder", "deployer"]
    err = capsys.readouterr().err
    assert "SIGHUP: config read again before starting" in err
    assert "agents.deployer: the node's token (ntok_x (box-1)) acts only as builder" in err
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL  # put back as it was


def reload(node: Node) -> None:
    async def run() -> None:
        try:
            await node.reload()
        finally:
            await node.hub.aclose()

    anyio.run(run)


def test_a_reload_adding_an_agent_outside_the_binding_keeps_the_running_config(tmp_path, capsys):
    node = node_with(tmp_path, answering(bound("builder"))[0], "builder")
    running = node.config
    node.config.path.write_text(node.config.path.read_text() + AGENT.format("deployer"))

    reload(node)

    assert node.config is running
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"commhub-agent node: SIGHUP: {running.path}: agents.deployer: the node's token")
    assert err[1:] == ["commhub-agent node: SIGHUP: keeping the running config"]


def test_a_reload_the_hub_cannot_answer_is_checked_against_what_it_said_before(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("commhub_agent.node.supervisor.RELOAD_ASK", 0.5)
    node = node_with(tmp_path, answering(httpx.Response(503))[0], "builder")
    node.token = identity(["builder"])
    running = node.config
    node.config.path.write_text(node.config.path.read_text() + AGENT.format("deployer"))

    reload(node)

    assert node.config is running
    err = capsys.readouterr().err
    assert "SIGHUP: the hub did not say who the token is (whoami: HTTP 503); checking what it said before" in err
    assert "agents.deployer: the node's token (ntok_AbCd1234 (box-1)) acts only as builder" in err
