"""The fast lane (commhub.hot: get_inbox, get_task and ack_inbox over POST /mcp on PostgreSQL, on
the event loop) answers byte for byte as the ordinary path (commhub.lean, the endpoint, hub_tools)
for the same request and state, in both protocol eras; everything it does not serve falls back to
that path; and it keeps the ordinary path's guarantees (leases renewed, receipts written, a revoked
token refused, a write counted once)."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from prometheus_client import REGISTRY

from commhub import hot
from commhub.asgi import application
from commhub.lean import lean_app
from commhub.logs import with_request_context
from commhub.metrics import requests_counted
from hub_agents.models import ApiToken
from hub_agents.services import token_create, token_revoke
from hub_core import ratelimit
from hub_core.body import whole_bodies
from hub_tasks.models import InboxMessage, Task, TaskStatus
from hub_tools.tools import invoke
from tests.helpers.asgi import Answer, ask, scope

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the lane reads on connections of its own
    pytest.mark.skipif(not hot.enabled(), reason="the fast lane serves PostgreSQL only"),
]

# The same stack as commhub.asgi.application, without the lane.
ordinary = with_request_context(requests_counted(whole_bodies(lean_app)))
MODERN = "2026-07-28"


def call(
    arguments: dict[str, Any], *, token: str, version: str | None = "2025-11-25", name: str = "get_inbox", id: Any = 7
) -> tuple[dict[str, Any], bytes]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    headers = {"authorization": f"Bearer {token}", "x_request_id": "same-request"}
    if version is not None:
        headers["mcp_protocol_version"] = version
    if version == MODERN:
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        headers |= {"mcp_method": "tools/call", "mcp_name": name}
    body = json.dumps({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).encode()
    request = scope(**headers)
    request["headers"].append((b"content-length", str(len(body)).encode()))
    return request, body


def through(*requests: tuple[dict[str, Any], bytes], lane: bool = True) -> tuple[list[Answer], int]:
    """Each request's answer, in order, with the lane on or off; and how many the lane answered."""

    async def run() -> list[Answer]:
        try:
            return [await ask(application if lane else ordinary, request, body) for request, body in requests]
        finally:
            await hot.close()

    before = hot.answered
    answers = asyncio.run(run())
    return answers, hot.answered - before


@pytest.fixture
def world(network, other_network, make_actor) -> dict[str, Any]:
    owner = make_actor(network, "owner")
    for n, (task, priority) in enumerate([("first", "normal"), ("urgent", "high"), ("later", "low")]):
        invoke(
            "send_task",
            owner,
            {"alias": "coder", "task": task, "priority": priority, "context": f"c{n}", "from_session": "lead"},
        )
    invoke("send_task", owner, {"alias": "coder", "task": "capped", "budget_usd": 1.5, "budget_tokens": 900})
    invoke("send_message", owner, {"alias": "coder", "message": 'héllo ✓ "quoted"', "from_session": "lead"})
    invoke("send_task", owner, {"alias": "rédacteur-2.b", "task": "unicode alias"})
    invoke("send_task", make_actor(other_network, "owner"), {"alias": "coder", "task": "elsewhere"})
    _, agent = token_create(network=network, role="member", name="agent")
    _, bound = token_create(network=network, role="member", name="bound", aliases=["coder"])
    _, viewer = token_create(network=network, role="viewer", name="viewer")
    # Every message read once: the ordinary path writes the receipts, both paths then read the same rows.
    through(*(call({"alias": alias, "limit": 50}, token=agent) for alias in ("coder", "rédacteur-2.b")), lane=False)
    return {"network": network, "other": other_network, "agent": agent, "bound": bound, "viewer": viewer}


CASES = [
    ("default", {"alias": "coder"}),
    ("limit 1", {"alias": "coder", "limit": 1}),
    ("limit 3", {"alias": "coder", "limit": 3}),
    ("network_id", {"alias": "coder", "network_id": "<network>"}),
    ("unicode alias", {"alias": "rédacteur-2.b"}),
    ("empty inbox", {"alias": "idle"}),
    ("wait 0", {"alias": "idle", "wait_seconds": 0}),
]


@pytest.mark.parametrize("version", [None, "2024-11-05", "2025-06-18", "2025-11-25", MODERN])
@pytest.mark.parametrize(("case", "arguments"), CASES, ids=[case for case, _ in CASES])
def test_the_lane_answers_byte_for_byte_as_the_ordinary_path(world, version, case, arguments):
    arguments = {name: world["network"].id if value == "<network>" else value for name, value in arguments.items()}
    request = call(arguments, token=world["agent"], version=version)

    (fast,), served = through(request)
    (slow,), _ = through(request, lane=False)

    assert served == 1, case
    assert fast == slow, case
    assert fast[0] == 200 and json.loads(fast[2])["result"]["isError"] is False


def test_the_rows_are_the_inbox_in_delivery_order(world):
    (answer,), served = through(call({"alias": "coder"}, token=world["bound"]))

    messages = json.loads(answer[2])["result"]["structuredContent"]["messages"]
    assert served == 1
    assert [m["content"] for m in messages] == ["urgent", "first", "capped", 'héllo ✓ "quoted"', "later"]
    assert {m["network_id"] for m in messages} == {world["network"].id}  # not the other network's
    capped = next(m for m in messages if m["content"] == "capped")
    assert (capped["budget_usd"], capped["budget_tokens"]) == (1.5, 900)
    assert all(m["delivered_via"] == "get_inbox" and m["delivered_at"] for m in messages)


REFUSED = [
    ("another network", lambda w: {"alias": "coder", "network_id": w["other"].id}, "agent"),
    ("a bad limit", lambda w: {"alias": "coder", "limit": 0}, "agent"),
    ("an unknown argument", lambda w: {"alias": "coder", "nope": 1}, "agent"),
    ("no alias", lambda w: {}, "agent"),
    ("another token's alias", lambda w: {"alias": "tester"}, "bound"),
    ("a viewer", lambda w: {"alias": "coder"}, "viewer"),
]


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
@pytest.mark.parametrize(("case", "build", "who"), REFUSED, ids=[case for case, *_ in REFUSED])
def test_a_refusal_is_the_ordinary_paths_own(world, version, case, build, who):
    request = call(build(world), token=world[who], version=version)

    (fast,), served = through(request)
    (slow,), _ = through(request, lane=False)

    assert served == 0, case
    assert fast == slow, case


def test_what_the_lane_does_not_serve_falls_back(world):
    token = world["agent"]
    wrong_header = call({"alias": "coder"}, token=token, version=MODERN)
    wrong_header[0]["headers"] = [(n, b"get_task" if n == b"mcp-name" else v) for n, v in wrong_header[0]["headers"]]
    requests = [
        call({"alias": "coder"}, token=token, name="list_tasks"),  # another tool
        call({"alias": "coder", "wait_seconds": 1}, token=token),  # a long-poll (messages are waiting: no wait)
        call({"alias": "coder"}, token="ntok_unknown"),  # an unknown token
        call({"alias": "coder"}, token=token, version="1999-01-01"),  # a version the hub does not serve
        wrong_header,  # the modern era's headers must mirror the body
    ]
    fast, served = through(*requests)
    slow, _ = through(*requests, lane=False)

    assert served == 0
    assert [answer[:2] for answer in fast] == [answer[:2] for answer in slow]
    assert [answer[2] for answer in fast] == [answer[2] for answer in slow]


PRODUCTION = {
    "SECURE_SSL_REDIRECT": True,
    "SECURE_PROXY_SSL_HEADER": ("HTTP_X_FORWARDED_PROTO", "https"),
    "SECURE_HSTS_SECONDS": 3600,
}
FRONT = [  # (case, scope changes, settings, whether the lane answers)
    ("an allowed origin", {"origin": "http://127.0.0.1:8000"}, {}, True),
    ("another site's origin", {"origin": "https://evil.example"}, {}, False),
    ("a host not allowed", {"host": "evil.example"}, {}, False),
    ("a profile query", {"query": "tools=agent"}, {}, True),
    ("plain HTTP in production: redirected", {}, PRODUCTION, False),
    ("HTTPS behind the proxy in production: HSTS", {"x_forwarded_proto": "https"}, PRODUCTION, True),
    ("a host not allowed in production", {"host": "evil.example", "x_forwarded_proto": "https"}, PRODUCTION, False),
]


@pytest.mark.parametrize(("case", "changes", "overrides", "served_here"), FRONT, ids=[case for case, *_ in FRONT])
def test_the_front_checks_and_headers_are_the_ordinary_paths(world, settings, case, changes, overrides, served_here):
    """commhub.front remembers the checks' outcome by what they read: the same request under other
    settings, or with another Host, Origin or proxy header, is checked afresh."""
    plain = call({"alias": "coder"}, token=world["agent"])
    through(plain)  # remembered under the settings before any override
    for name, value in overrides.items():
        setattr(settings, name, value)
    request, body = call({"alias": "coder"}, token=world["agent"])
    query, host = changes.get("query", ""), changes.get("host", "127.0.0.1")
    headers = {name: value for name, value in changes.items() if name not in ("query", "host")}
    token = f"Bearer {world['agent']}"
    request = {**request, **scope(query=query, host=host, **headers, authorization=token, x_request_id="same-request")}
    request["headers"] += [(b"mcp-protocol-version", b"2025-11-25"), (b"content-length", str(len(body)).encode())]

    (fast, again), served = through((request, body), (plain[0], body))
    (slow, slow_again), _ = through((request, body), (plain[0], body), lane=False)

    assert (fast, again) == (slow, slow_again), case
    assert served == int(served_here) + int(again[0] == 200), case


def test_a_scope_of_lists_is_served_as_one_of_tuples(world):
    """daphne gives the headers and the server address as lists, where ASGI says tuples."""
    request, body = call({"alias": "coder"}, token=world["agent"])
    listed = {**request, "headers": [list(pair) for pair in request["headers"]], "server": list(request["server"])}

    (fast,), served = through((listed, body))
    (slow,), _ = through((request, body), lane=False)

    assert (served, fast) == (1, slow)


def test_a_first_read_writes_its_receipts(world, make_actor):
    invoke("send_task", make_actor(world["network"], "owner"), {"alias": "fresh", "task": "new"})
    observed = {"via": "get_inbox"}
    before = REGISTRY.get_sample_value("commhub_dispatch_to_delivery_seconds_count", observed) or 0

    (fast,), served = through(call({"alias": "fresh"}, token=world["agent"]))
    (again,), _ = through(call({"alias": "fresh"}, token=world["agent"]), lane=False)

    assert served == 1
    assert REGISTRY.get_sample_value("commhub_dispatch_to_delivery_seconds_count", observed) == before + 1
    assert fast == again  # the receipt as stored is the one the first answer showed
    message = InboxMessage.objects.get(to_alias="fresh")
    assert message.delivered_via == "get_inbox" and message.delivered_to_agent_at is not None
    assert Task.objects.get(pk=message.task_id).status == TaskStatus.DELIVERED


def test_a_read_renews_the_aliass_running_leases(world):
    task = Task.objects.get(content="first")
    soon = timezone.now() + timedelta(seconds=2)
    Task.objects.filter(pk=task.pk).update(status=TaskStatus.RUNNING, lease=timedelta(minutes=5), lease_expires_at=soon)

    _, served = through(call({"alias": "coder"}, token=world["agent"]))

    assert served == 1
    renewed = Task.objects.get(pk=task.pk).lease_expires_at
    assert renewed > soon + timedelta(minutes=4)


def test_a_revoked_token_is_refused_at_once(world):
    request = call({"alias": "coder"}, token=world["agent"])
    through(request)  # remembered by this process

    token_revoke(token=ApiToken.objects.get(name="agent"))
    (answer,), served = through(request)

    assert (answer[0], served) == (401, 0)


@pytest.fixture
def tasks(world, make_actor) -> dict[str, str]:
    """A task with history, attempts, a dependent, a question with options, a budget and usage; a
    plain one; one in another network."""
    owner = make_actor(world["network"], "owner")
    worker = make_actor(world["network"], "member")
    worked = invoke("send_task", owner, {"alias": "worker", "task": "worked", "budget_usd": 0.25, "lease_seconds": 60})
    worked_id = worked["task_id"] if isinstance(worked, dict) else worked.task_id
    dependent = invoke("send_task", owner, {"alias": "worker", "task": "after", "depends_on": [worked_id]})
    dependent_id = dependent["task_id"] if isinstance(dependent, dict) else dependent.task_id
    inbox = invoke("get_inbox", worker, {"alias": "worker"})
    message = next(row for row in inbox if row["task_id"] == worked_id)
    invoke("ack_inbox", worker, {"alias": "worker", "message_id": message["id"]})
    invoke("report_status", worker, {"resume_id": "r1", "alias": "worker", "status": "working", "task": worked_id})
    invoke("ask_operator", worker, {"task_id": worked_id, "question": "Which?", "options": ["a", "b ✓"]})
    invoke("report_completion", worker, {"alias": "worker", "task": worked_id, "result": "done ✓"})
    plain = invoke("send_task", owner, {"alias": "coder", "task": "plain", "ttl_seconds": 3600})
    elsewhere = invoke("send_task", make_actor(world["other"], "owner"), {"alias": "coder", "task": "theirs"})
    return {
        "worked": worked_id,
        "dependent": dependent_id,
        "plain": plain["task_id"] if isinstance(plain, dict) else plain.task_id,
        "elsewhere": elsewhere["task_id"] if isinstance(elsewhere, dict) else elsewhere.task_id,
    }


@pytest.mark.parametrize("version", [None, "2024-11-05", "2025-11-25", MODERN])
@pytest.mark.parametrize("which", ["worked", "dependent", "plain"])
def test_get_task_is_answered_byte_for_byte_as_the_ordinary_path(world, tasks, version, which):
    request = call({"task_id": tasks[which]}, token=world["agent"], version=version, name="get_task")

    (fast,), served = through(request)
    (slow,), _ = through(request, lane=False)

    assert served == 1, which
    assert fast == slow, which
    result = json.loads(fast[2])["result"]
    assert result["isError"] is False and tasks[which] in fast[2].decode()


def test_get_task_shows_the_whole_history(world, tasks):
    (answer,), served = through(call({"task_id": tasks["worked"]}, token=world["agent"], name="get_task"))

    shown = json.loads(answer[2])["result"]["structuredContent"]
    assert served == 1
    assert shown["task"]["dependents"] == [tasks["dependent"]] and shown["task"]["attempt_count"] == 1
    assert shown["task"]["budget_usd"] == 0.25 and shown["task"]["lease_seconds"] == 60
    assert [q["options"] for q in shown["questions"]] == [["a", "b ✓"]]
    assert shown["attempts"][0]["alias"] == "worker" and len(shown["events"]) >= 4


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
@pytest.mark.parametrize("which", ["elsewhere", "no such task"])
def test_get_task_of_a_task_out_of_reach_is_the_ordinary_refusal(world, tasks, version, which):
    request = call({"task_id": tasks.get(which, which)}, token=world["agent"], version=version, name="get_task")

    (fast,), served = through(request)
    (slow,), _ = through(request, lane=False)

    assert served == 0
    assert fast == slow
    assert json.loads(fast[2])["result"]["structuredContent"]["ok"] is False


# --- ack_inbox: a write ----------------------------------------------------------------------------


def _message(world, make_actor, alias: str = "coder") -> str:
    """A plain message (no task behind it) for `alias`; its id."""
    owner = make_actor(world["network"], "owner")
    return invoke("send_message", owner, {"alias": alias, "message": "m"}).message_id


def _ack(message_id: str, token: str, **more: Any) -> tuple[dict[str, Any], bytes]:
    return call({"alias": "coder", "message_id": message_id, **more}, token=token, name="ack_inbox")


@pytest.mark.parametrize("version", [None, MODERN])
def test_an_ack_of_a_plain_message_is_one_statement_answered_as_the_ordinary_path(world, make_actor, version):
    first, second = _message(world, make_actor), _message(world, make_actor)

    (fast,), served = through(_ack(first, world["agent"], response="thanks"))
    (slow,), _ = through(_ack(second, world["agent"], response="thanks"), lane=False)

    assert served == 1
    assert fast == slow and json.loads(fast[2])["result"]["isError"] is False
    for message_id in (first, second):
        message = InboxMessage.objects.get(pk=message_id)
        assert message.acked_at is not None and message.delivered_via == "ack_inbox"


def test_an_ack_keeps_the_receipt_of_the_read_that_delivered_it(world):
    read = InboxMessage.objects.get(to_alias="coder", type="message")  # the world's read delivered it

    _, served = through(_ack(read.id, world["agent"]))

    acked = InboxMessage.objects.get(pk=read.id)
    assert served == 1 and acked.acked_at is not None
    assert (acked.delivered_via, acked.delivered_to_agent_at) == ("get_inbox", read.delivered_to_agent_at)


def test_an_ack_of_a_task_message_is_inbox_acks(world, make_actor):
    """The lane checks the call once and leaves the task's move to inbox_ack."""
    owner = make_actor(world["network"], "owner")
    ids = [invoke("send_task", owner, {"alias": "coder", "task": f"t{n}"}).task_id for n in range(2)]

    (fast,), served = through(_ack(ids[0], world["agent"]))
    (slow,), _ = through(_ack(ids[1], world["agent"]), lane=False)

    assert served == 1 and fast == slow
    assert [Task.objects.get(pk=task_id).status for task_id in ids] == [TaskStatus.ACKED, TaskStatus.ACKED]


def test_an_ack_renews_the_aliass_running_leases(world, make_actor):
    task = Task.objects.get(content="first")
    soon = timezone.now() + timedelta(seconds=2)
    Task.objects.filter(pk=task.pk).update(status=TaskStatus.RUNNING, lease=timedelta(minutes=5), lease_expires_at=soon)

    _, served = through(_ack(_message(world, make_actor), world["agent"]))

    assert served == 1
    assert Task.objects.get(pk=task.pk).lease_expires_at > soon + timedelta(minutes=4)


ACK_REFUSED = [
    ("no such message", lambda w, m: {"message_id": "no-such-message"}, "agent"),
    ("another alias's message", lambda w, m: {"message_id": m(alias="tester"), "alias": "tester"}, "bound"),
    ("a viewer", lambda w, m: {"message_id": m()}, "viewer"),
    ("no message_id", lambda w, m: {}, "agent"),
    ("an unknown argument", lambda w, m: {"message_id": m(), "nope": 1}, "agent"),
]


@pytest.mark.parametrize(("case", "build", "who"), ACK_REFUSED, ids=[case for case, *_ in ACK_REFUSED])
def test_an_ack_refused_is_answered_as_the_ordinary_path(world, make_actor, case, build, who):
    arguments = {"alias": "coder", **build(world, lambda alias="coder": _message(world, make_actor, alias))}
    request = call(arguments, token=world[who], version=MODERN, name="ack_inbox")

    (fast,), _ = through(request)
    (slow,), _ = through(request, lane=False)

    assert fast == slow, case
    assert json.loads(fast[2])["result"]["isError"] is True, case


def test_a_second_ack_is_refused_as_the_ordinary_path_refuses_it(world, make_actor):
    message_id = _message(world, make_actor)
    through(_ack(message_id, world["agent"]))

    (fast,), served = through(_ack(message_id, world["agent"]))
    (slow,), _ = through(_ack(message_id, world["agent"]), lane=False)

    assert served == 1 and fast == slow
    assert json.loads(fast[2])["result"]["structuredContent"]["code"] == "message_already_acked"


def test_an_ack_with_an_idempotency_key_is_the_ordinary_paths(world, make_actor):
    (answer,), served = through(_ack(_message(world, make_actor), world["agent"], idempotency_key="k-1"))

    assert served == 0 and json.loads(answer[2])["result"]["isError"] is False


def test_an_ack_counts_once_against_the_write_limit(world, make_actor, settings):
    """Admitted in the lane, answered by inbox_ack (a task's message): the write is counted once."""
    owner = make_actor(world["network"], "owner")
    ids = [invoke("send_task", owner, {"alias": "coder", "task": f"t{n}"}).task_id for n in range(3)]
    settings.COMMHUB_WRITE_RATE_LIMIT = "2/minute"
    settings.COMMHUB_RATE_LIMIT_PREFIX = f"hot-{ids[0]}"
    ratelimit.reset()

    answers, _ = through(*(_ack(task_id, world["agent"]) for task_id in ids))

    codes = [json.loads(answer[2])["result"]["structuredContent"].get("code") for answer in answers]
    assert codes == [None, None, "rate_limited"]
