"""The access matrix's identity dimensions (issue 26): who may act as an agent.

Every tool, over MCP (POST /mcp) and REST (/api/v1/), is called with arguments in which the caller
alias (or from_session) is "a-coder", by each of these tokens of the network, in an open network and
in a strict one built the same way:

    bound         a member token bound to "a-coder"
    pattern       a member token bound to the pattern "a-cod*"
    elsewhere     a member token bound to "a-other"
    unbound       a member token bound to no alias
    admin         an admin token bound to no alias (owners and admins moderate channels)
    viewer        a viewer token
    viewer_bound  a viewer token bound to "a-coder" (a viewer acts as no agent, bound or not)

The answers are written out by hand below (EXPECTED), from the rules in hub_agents.identity's
docstring, not computed from it. An answered write is checked for what it recorded (who sent,
claimed, posted); a refusal writes nothing, anywhere. In the open network an unbound member token
still acts as any alias: the contract's way, one token per network.

Speed: the two networks are built once, in a transaction rolled back at the end; each test runs in a
savepoint of it (pytest-django's `db`), /mcp's and the REST inbox's pool work included
(tests/plugins/pool.py runs it on the test's thread).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from hub_agents.models import AgentSession, AuditEntry, IdentityPolicy, Network, NodeCommand
from hub_agents.services import network_create, network_policy_set, token_authenticate, token_create
from hub_approvals.models import Approval, ApprovalRule
from hub_channels.models import Channel, ChannelMember, ChannelPost
from hub_schedules.models import Schedule, ScheduleRun
from hub_tasks.models import Budget, Cap, Completion, InboxMessage, Question, Task
from hub_tools.tools import TOOLS, TOOLS_BY_NAME
from tests.helpers.access import (
    assert_answered,
    assert_tool_refused,
    invoke,
    rolled_back_data,
    writes_recorded,
)
from tests.helpers.calls import (
    ask_operator,
    budget_set,
    cancel_task,
    cap_set,
    channel_create,
    channel_post,
    node_command,
    report_completion,
    report_node,
    report_status,
    schedule_create,
    schedule_pause,
    send_message,
    send_task,
)

NODE_AGENT = {"runtime": "command", "concurrency": 1, "running": 0}  # an agent a node hosts, less its alias
POLICIES = ("open", "strict")
TRANSPORTS = ("mcp", "rest")

# caller -> (role, aliases the token is bound to)
CALLERS: dict[str, tuple[str, list[str]]] = {
    "bound": ("member", ["a-coder"]),
    "pattern": ("member", ["a-cod*"]),
    "elsewhere": ("member", ["a-other"]),
    "unbound": ("member", []),
    "admin": ("admin", []),
    "viewer": ("viewer", []),
    "viewer_bound": ("viewer", ["a-coder"]),
}

# Each tool's call, its caller "a-coder" ("@name": an id of the network's world, Side.value).
CALLS: dict[str, dict[str, Any]] = {
    "report_status": {"resume_id": "a-coder-resume", "alias": "a-coder", "status": "working", "task": "@live"},
    "report_completion": {"alias": "a-coder", "task": "a later job", "result": "done by a-coder"},
    "get_inbox": {"alias": "a-coder"},
    "ack_inbox": {"alias": "a-coder", "message_id": "@message"},
    "send_task": {"alias": "a-helper", "task": "help a-coder", "from_session": "a-coder"},
    "send_message": {"alias": "a-helper", "message": "hello from a-coder", "from_session": "a-coder"},
    "send_reply": {"alias": "a-lead", "text": "the live task, done", "in_reply_to": "@live", "from_session": "a-coder"},
    "send_ack": {"task_id": "@live", "from_session": "a-coder"},
    "retry_task": {"task_id": "@cancelled", "from_session": "a-coder"},
    "cancel_task": {"task_id": "@live", "reason": "not needed", "from_session": "a-coder"},
    "reassign_task": {"task_id": "@live", "new_alias": "a-helper", "from_session": "a-coder"},
    "get_task": {"task_id": "@live"},
    "list_tasks": {"alias": "a-coder"},
    "get_all_status": {},
    "get_session_status": {"alias": "a-coder"},
    "get_completions": {"alias": "a-coder"},
    "broadcast": {"message": "to everyone"},
    "find_agents": {"skill": "python"},
    "list_open_tasks": {"alias": "a-coder"},
    "claim_task": {"task_id": "@open", "alias": "a-coder"},
    "ask_operator": {"task_id": "@live", "question": "which way now?"},  # the task a-coder holds
    "answer_question": {"question_id": "@question", "answer": "this way"},
    "list_questions": {},
    "list_approvals": {},
    "decide_approval": {"approval_id": "@approval", "decision": "approve"},
    "get_thread": {"task_id": "@live"},
    "channel_create": {"name": "fresh-room", "alias": "a-coder"},
    "channel_list": {"alias": "a-coder"},
    "channel_join": {"channel_id": "@lobby", "alias": "a-coder"},
    "channel_leave": {"channel_id": "@room", "alias": "a-coder"},
    "channel_info": {"channel_id": "@room"},
    "channel_configure": {"channel_id": "@room", "alias": "a-coder", "description": "set by a-coder"},
    "channel_post": {"channel_id": "@room", "alias": "a-coder", "content": "posted as a-coder"},
    "channel_read": {"channel_id": "@room", "alias": "a-coder"},
    "search": {"query": "zebra", "alias": "a-coder"},
    "list_nodes": {},
    "report_node": {"node_id": "a-node-2", "agents": [NODE_AGENT | {"alias": "a-coder"}]},
    "node_command": {"node_id": "a-node", "kind": "pause", "alias": "a-coder"},
    "node_command_ack": {"command_id": "@command", "ok": True},  # the node's answer, for a-coder
    "node_commands": {},
    # a schedule's alias names the target of its tasks, not its caller
    "schedule_create": {"name": "a-fresh", "alias": "a-coder", "task": "for a-coder", "cron": "0 2 * * *"},
    "schedule_list": {},
    "schedule_pause": {"schedule_id": "@schedule"},
    "schedule_resume": {"schedule_id": "@schedule_paused"},
    "schedule_run_now": {"schedule_id": "@schedule"},
    "schedule_delete": {"schedule_id": "@schedule"},
    "cap_set": {"scope": "skill", "value": "rust", "limit": 5},
    "cap_list": {},
    "cap_delete": {"cap_id": "@cap"},
    # a budget's alias names the agent whose runs it counts, not its caller
    "budget_set": {"period": "month", "alias": "a-coder", "limit_usd": 3},
    "budget_list": {},
    "budget_delete": {"budget_id": "@budget"},
}

# The documented answers, by hand. Each row: the answers to the callers in CALLERS' order, in an open
# network, then in a strict one. ok: answered; alias: alias_not_yours (403); denied: permission_denied.
#                       bound pattern elsewhere unbound admin viewer viewer_bound
EXPECTED: dict[str, tuple[str, str]] = {
    # the agent itself: its status, completions, inbox and claims
    "report_status": ("ok ok alias ok ok denied denied", "ok ok alias alias alias denied denied"),
    "report_completion": ("ok ok alias ok ok denied denied", "ok ok alias alias alias denied denied"),
    "get_inbox": ("ok ok alias ok ok alias alias", "ok ok alias alias alias alias alias"),
    "ack_inbox": ("ok ok alias ok ok denied denied", "ok ok alias alias alias denied denied"),
    "claim_task": ("ok ok alias ok ok denied denied", "ok ok alias alias alias denied denied"),
    # checked in their services: the agent holding the task asks; a node speaks for its agents
    "ask_operator": ("ok ok alias ok ok denied denied", "ok ok alias alias alias denied denied"),
    "report_node": ("ok ok alias ok ok denied denied", "ok ok alias alias alias denied denied"),
    "node_command_ack": ("ok ok alias ok ok denied denied", "ok ok alias alias alias denied denied"),
    # from_session "a-coder": who others see acting
    "send_task": ("ok ok alias ok ok denied denied", "ok ok alias alias alias denied denied"),
    "send_message": ("ok ok alias ok ok denied denied", "ok ok alias alias alias denied denied"),
    "send_reply": ("ok ok alias ok ok denied denied", "ok ok alias alias alias denied denied"),
    "send_ack": ("ok ok alias ok ok denied denied", "ok ok alias alias alias denied denied"),
    "retry_task": ("ok ok alias ok ok denied denied", "ok ok alias alias alias denied denied"),
    "cancel_task": ("ok ok alias ok ok denied denied", "ok ok alias alias alias denied denied"),
    "reassign_task": ("ok ok alias ok ok denied denied", "ok ok alias alias alias denied denied"),
    # a channel member: owners and admins of the network moderate every channel, strict or not
    "channel_create": ("ok ok alias ok ok denied denied", "ok ok alias alias ok denied denied"),
    "channel_join": ("ok ok alias ok ok denied denied", "ok ok alias alias ok denied denied"),
    "channel_leave": ("ok ok alias ok ok denied denied", "ok ok alias alias ok denied denied"),
    "channel_configure": ("ok ok alias ok ok denied denied", "ok ok alias alias ok denied denied"),
    "channel_post": ("ok ok alias ok ok denied denied", "ok ok alias alias ok denied denied"),
    "channel_read": ("ok ok alias ok ok alias alias", "ok ok alias alias ok alias alias"),
    "search": ("ok ok alias ok ok alias alias", "ok ok alias alias ok alias alias"),
    # no caller: an alias here names a target or a filter, which anyone who may read (or write) names
    "get_task": ("ok ok ok ok ok ok ok", "ok ok ok ok ok ok ok"),
    "list_tasks": ("ok ok ok ok ok ok ok", "ok ok ok ok ok ok ok"),
    "get_all_status": ("ok ok ok ok ok ok ok", "ok ok ok ok ok ok ok"),
    "get_session_status": ("ok ok ok ok ok ok ok", "ok ok ok ok ok ok ok"),
    "get_completions": ("ok ok ok ok ok ok ok", "ok ok ok ok ok ok ok"),
    "find_agents": ("ok ok ok ok ok ok ok", "ok ok ok ok ok ok ok"),
    "list_open_tasks": ("ok ok ok ok ok ok ok", "ok ok ok ok ok ok ok"),
    "list_questions": ("ok ok ok ok ok ok ok", "ok ok ok ok ok ok ok"),
    "list_approvals": ("ok ok ok ok ok ok ok", "ok ok ok ok ok ok ok"),
    "get_thread": ("ok ok ok ok ok ok ok", "ok ok ok ok ok ok ok"),
    "channel_list": ("ok ok ok ok ok ok ok", "ok ok ok ok ok ok ok"),
    "channel_info": ("ok ok ok ok ok ok ok", "ok ok ok ok ok ok ok"),
    "list_nodes": ("ok ok ok ok ok ok ok", "ok ok ok ok ok ok ok"),
    "node_commands": ("ok ok ok ok ok ok ok", "ok ok ok ok ok ok ok"),
    "schedule_list": ("ok ok ok ok ok ok ok", "ok ok ok ok ok ok ok"),
    "cap_list": ("ok ok ok ok ok ok ok", "ok ok ok ok ok ok ok"),
    "budget_list": ("ok ok ok ok ok ok ok", "ok ok ok ok ok ok ok"),
    "broadcast": ("ok ok ok ok ok denied denied", "ok ok ok ok ok denied denied"),
    "answer_question": ("ok ok ok ok ok denied denied", "ok ok ok ok ok denied denied"),
    "decide_approval": ("denied denied denied denied ok denied denied", "denied denied denied denied ok denied denied"),
    # owners and admins command nodes, whatever the policy (a command names no caller)
    "node_command": ("denied denied denied denied ok denied denied", "denied denied denied denied ok denied denied"),
    # owners and admins change schedules, whatever the policy (a schedule names no caller)
    "schedule_create": ("denied denied denied denied ok denied denied", "denied denied denied denied ok denied denied"),
    "schedule_pause": ("denied denied denied denied ok denied denied", "denied denied denied denied ok denied denied"),
    "schedule_resume": ("denied denied denied denied ok denied denied", "denied denied denied denied ok denied denied"),
    "schedule_run_now": (
        "denied denied denied denied ok denied denied",
        "denied denied denied denied ok denied denied",
    ),
    "schedule_delete": ("denied denied denied denied ok denied denied", "denied denied denied denied ok denied denied"),
    # owners and admins change caps, whatever the policy (a cap names no caller)
    "cap_set": ("denied denied denied denied ok denied denied", "denied denied denied denied ok denied denied"),
    "cap_delete": ("denied denied denied denied ok denied denied", "denied denied denied denied ok denied denied"),
    # owners and admins change budgets, whatever the policy (a budget's alias is not its caller)
    "budget_set": ("denied denied denied denied ok denied denied", "denied denied denied denied ok denied denied"),
    "budget_delete": ("denied denied denied denied ok denied denied", "denied denied denied denied ok denied denied"),
}
CODES = {"alias": "alias_not_yours", "denied": "permission_denied"}
# What each refused caller's alias_not_yours says it is (the rule that refused it).
WHY = {"elsewhere": "a-other", "unbound": "strict", "admin": "strict", "viewer": "viewer", "viewer_bound": "viewer"}

# The tools' caller arguments, as the specs must declare them (Tool.callers): (speaks, filled when
# left out). ask_operator and report_node check the agent they speak for in their services instead.
CALLER_ARGUMENTS: dict[str, dict[str, tuple[str, bool]]] = {
    "report_status": {"alias": ("agent", False)},
    "report_completion": {"alias": ("agent", False)},
    "get_inbox": {"alias": ("agent", False)},
    "ack_inbox": {"alias": ("agent", False)},
    "claim_task": {"alias": ("agent", False)},
    "send_task": {"from_session": ("sender", True)},
    "send_message": {"from_session": ("sender", True)},
    "send_reply": {"from_session": ("sender", True)},
    "send_ack": {"from_session": ("sender", True)},
    "retry_task": {"from_session": ("sender", True)},
    "cancel_task": {"from_session": ("sender", True)},
    "reassign_task": {"from_session": ("sender", True)},
    "channel_create": {"alias": ("member", False)},
    "channel_join": {"alias": ("member", False)},
    "channel_leave": {"alias": ("member", False)},
    "channel_configure": {"alias": ("member", True)},
    "channel_post": {"alias": ("member", False)},
    "channel_read": {"alias": ("member", True)},
    "search": {"alias": ("member", False)},
}


def expected(tool: str, caller: str, policy: str) -> str:
    return EXPECTED[tool][POLICIES.index(policy)].split()[list(CALLERS).index(caller)]


# --- the two networks, built the same way ----------------------------------------------------------


@dataclass
class Side:
    """One network and its world: ids of what the calls aim at, and a token per caller."""

    network: Network
    tokens: dict[str, str]  # caller -> raw token
    names: dict[str, str]  # caller -> the token's own name (Actor.names): "token:<its name>"
    live: str  # delivered to a-coder by a-lead, its task message pending in a-coder's inbox
    cancelled: str  # a-coder's, cancelled: retryable
    message: str  # a plain message pending in a-coder's inbox
    open: str  # an open task in the pool, which a-coder's skills cover
    question: str  # a-coder's unanswered question about `live`
    approval: str  # a message to a-gated, held by the network's rule
    room: str  # a group channel a-coder owns, a-helper a member; a-coder's post in it says "zebra"
    lobby: str  # a group channel a-lead owns, a-coder not in it
    command: str  # an admin's pause of a-coder on a-node, not yet answered
    schedule: str  # a schedule sending to a-coder, running
    schedule_paused: str  # another, paused
    cap: str  # a cap on the skill gpu (no task needs it)
    budget: str  # a budget of a-coder's day

    def value(self, template: Any) -> Any:
        if isinstance(template, dict):
            return {key: self.value(item) for key, item in template.items()}
        if isinstance(template, str) and template.startswith("@"):
            return getattr(self, template[1:])
        return template


@dataclass
class Sides:
    open: Side
    strict: Side

    def __getitem__(self, policy: str) -> Side:
        return getattr(self, policy)


def build_side(policy: str) -> Side:
    network = network_create(name=f"{policy}-net")[0]
    tokens, names = {}, {}
    for caller, (role, aliases) in CALLERS.items():
        name = f"{policy}-{caller}"
        tokens[caller], names[caller] = token_create(network=network, role=role, name=name, aliases=aliases)[1], name
    seed = token_authenticate(raw=tokens["unbound"])  # builds while the network is still open

    for alias in ("a-coder", "a-helper", "a-lead", "a-other"):
        report_status(actor=seed, resume_id=f"{alias}-resume", alias=alias, status="idle", skills=["python"])
    report_node(actor=seed, node_id="a-node", agents=[NODE_AGENT | {"alias": "a-coder"}])
    live = send_task(actor=seed, alias="a-coder", task="the live task", from_session="a-lead")["task_id"]
    cancelled = send_task(actor=seed, alias="a-coder", task="an old task", from_session="a-lead")["task_id"]
    cancel_task(actor=seed, task_id=cancelled)
    message = send_message(actor=seed, alias="a-coder", message="a plain message", from_session="a-lead")
    open_task = send_task(
        actor=seed, alias="pool", task="an open task", from_session="a-lead", required_skills=["python"]
    )["task_id"]
    question = ask_operator(actor=seed, task_id=live, question="which way?")["question_id"]
    ApprovalRule.objects.create(network=network, name="gate", tool="send_message", target_alias="a-gated")
    approval = send_message(actor=seed, alias="a-gated", message="a gated message")["approval_id"]
    report_completion(actor=seed, alias="a-coder", task="an earlier job", result="earlier")
    room = channel_create(actor=seed, name="room", alias="a-coder", members=["a-helper"])["channel_id"]
    channel_post(actor=seed, channel_id=room, alias="a-coder", content="a zebra crossing, members only")
    lobby = channel_create(actor=seed, name="lobby", alias="a-lead")["channel_id"]
    admin = token_authenticate(raw=tokens["admin"])
    command = node_command(actor=admin, node_id="a-node", kind="pause", alias="a-coder")["command"]["command_id"]
    schedule, schedule_paused = (
        schedule_create(actor=admin, name=name, alias="a-coder", task="nightly", cron="0 2 * * *")["schedule"][
            "schedule_id"
        ]
        for name in ("nightly", "paused")
    )
    schedule_pause(actor=admin, schedule_id=schedule_paused)
    cap = cap_set(actor=admin, scope="skill", value="gpu", limit=3)["cap"]["cap_id"]
    budget = budget_set(actor=admin, alias="a-coder", period="day", limit_usd=5)["budget"]["budget_id"]
    if policy == "strict":
        network_policy_set(network=network, policy=IdentityPolicy.STRICT, by="test")
    return Side(
        network=network,
        tokens=tokens,
        names=names,
        live=live,
        cancelled=cancelled,
        message=message["message_id"],
        open=open_task,
        question=question,
        approval=approval,
        room=room,
        lobby=lobby,
        command=command,
        schedule=schedule,
        schedule_paused=schedule_paused,
        cap=cap,
        budget=budget,
    )


def build_sides() -> Sides:
    return Sides(open=build_side("open"), strict=build_side("strict"))


# --- what an answer shows, and what it recorded ----------------------------------------------------


def sender_in_history(task_id: str) -> str:
    """The detail of the task's newest history row ("cancelled by a-coder: …")."""
    return Task.objects.get(pk=task_id).events.order_by("-id").values_list("detail", flat=True).first() or ""


def assert_effect(side: Side, tool: str, body: dict[str, Any]) -> None:
    """What an answered call shows or recorded, as a-coder."""
    network = side.network
    if tool == "report_status":
        assert AgentSession.objects.get(network=network, alias="a-coder").status == "working"
    elif tool == "report_completion":
        assert Completion.objects.filter(network=network, session_name="a-coder", result="done by a-coder").exists()
    elif tool == "get_inbox":
        assert {side.live, side.message} <= {row["id"] for row in body["messages"]}, body
    elif tool == "ack_inbox":
        assert InboxMessage.objects.get(pk=side.message).acked_at is not None
    elif tool == "claim_task":
        assert Task.objects.get(pk=side.open).to_name == "a-coder"
    elif tool == "ask_operator":
        assert Question.objects.get(task_id=side.live, text="which way now?").asked_by == "a-coder"
    elif tool == "report_node":
        assert AgentSession.objects.get(network=network, alias="a-coder").node_id == "a-node-2"
    elif tool == "send_task":
        assert Task.objects.get(pk=body["task_id"]).from_name == "a-coder"
    elif tool in ("send_message", "send_reply"):
        assert InboxMessage.objects.get(pk=body["message_id"]).from_session == "a-coder"
        if tool == "send_reply":
            assert Task.objects.get(pk=side.live).status == "replied"
    elif tool == "send_ack":
        assert sender_in_history(side.live) == "acknowledged by a-coder"
    elif tool == "retry_task":
        assert sender_in_history(side.cancelled) == "retried by a-coder"
    elif tool == "cancel_task":
        assert sender_in_history(side.live) == "cancelled by a-coder: not needed"
    elif tool == "reassign_task":
        assert sender_in_history(side.live) == "a-coder → a-helper by a-coder"
    elif tool == "channel_create":
        assert ChannelMember.objects.get(channel_id=body["channel_id"], alias="a-coder").role == "owner"
    elif tool == "channel_join":
        assert ChannelMember.objects.filter(channel_id=side.lobby, alias="a-coder").exists()
    elif tool == "channel_leave":
        assert not ChannelMember.objects.filter(channel_id=side.room, alias="a-coder").exists()
    elif tool == "channel_configure":
        assert Channel.objects.get(pk=side.room).description == "set by a-coder"
    elif tool == "channel_post":
        assert ChannelPost.objects.get(channel_id=side.room, content="posted as a-coder").sender == "a-coder"
    elif tool == "channel_read":
        assert any("zebra" in post["content"] for post in body["posts"]), body
    elif tool == "search":  # a-coder's members-only post
        assert any(row["id"] and "zebra" in json.dumps(row) for row in body["results"]), body
    elif tool == "broadcast":
        assert body["recipients"] == 4
    elif tool == "answer_question":
        assert Question.objects.get(pk=side.question).answer == "this way"
    elif tool == "decide_approval":
        assert Approval.objects.get(pk=side.approval).status == "approved"
    elif tool == "node_command":
        assert NodeCommand.objects.get(command_id=body["command"]["command_id"]).alias == "a-coder"
    elif tool == "node_command_ack":
        assert NodeCommand.objects.get(command_id=side.command).status == "done"
    elif tool == "schedule_create":
        assert Schedule.objects.get(pk=body["schedule"]["schedule_id"]).alias == "a-coder"
    elif tool in ("schedule_pause", "schedule_resume"):
        assert Schedule.objects.get(pk=body["schedule"]["schedule_id"]).paused is (tool == "schedule_pause")
    elif tool == "schedule_run_now":
        assert ScheduleRun.objects.get(schedule_id=side.schedule).task.to_name == "a-coder"
    elif tool == "schedule_delete":
        assert not Schedule.objects.filter(pk=side.schedule).exists()
    elif tool == "cap_set":
        assert Cap.objects.get(pk=body["cap"]["cap_id"]).value == "rust"
    elif tool == "cap_delete":
        assert not Cap.objects.filter(pk=side.cap).exists()
    elif tool == "budget_set":
        assert Budget.objects.get(pk=body["budget"]["budget_id"]).alias == "a-coder"
    elif tool == "budget_delete":
        assert not Budget.objects.filter(pk=side.budget).exists()
    else:  # the reads without a caller: the network's own data
        assert side.network.pk in json.dumps(body) or "a-coder" in json.dumps(body), body


def check(client: Client, sides: Sides, transport: str, tool: str, caller: str, policy: str) -> None:
    side, answer = sides[policy], expected(tool, caller, policy)

    with writes_recorded() as written:
        outcome = invoke(client, transport, side.tokens[caller], tool, side.value(CALLS[tool]))

    if answer == "ok":
        assert_effect(side, tool, assert_answered(outcome))
        assert TOOLS_BY_NAME[tool].read_only or written, "an answered write is seen writing"
        return
    refused = assert_tool_refused(outcome, CODES[answer])
    if answer == "alias":
        assert WHY[caller] in refused["message"], refused
    assert written == []


CASES = [
    pytest.param(transport, tool, caller, policy, id=f"{transport}-{tool}-{caller}-{policy}")
    for transport in TRANSPORTS
    for tool in CALLS
    for policy in POLICIES
    for caller in CALLERS
]


# --- left out: from_session and a member's alias filled in -----------------------------------------

# caller -> the sender send_task records when from_session is left out (open, strict); None: refused
# invalid_argument (a token of several aliases names the one acting).
SENDER_LEFT_OUT: dict[str, tuple[str | None, str | None]] = {
    "bound": ("a-coder", "a-coder"),
    "pattern": (None, None),
    "elsewhere": ("a-other", "a-other"),
    "unbound": ("hub", "token:strict-unbound"),  # open: the contract's default sender
    "admin": ("hub", "token:strict-admin"),
}


def check_sender_left_out(client: Client, sides: Sides, transport: str, caller: str, policy: str) -> None:
    side = sides[policy]

    with writes_recorded() as written:
        outcome = invoke(client, transport, side.tokens[caller], "send_task", {"alias": "a-helper", "task": "who?"})

    recorded = SENDER_LEFT_OUT[caller][POLICIES.index(policy)]
    if recorded is None:
        # REST's `error` is the code; MCP's words the argument's fault, its code beside it
        code = outcome.body["error"] if outcome.response is not None else outcome.body["code"]
        assert (outcome.body["ok"], code, outcome.body["field"]) == (False, "invalid_argument", "from_session")
        assert written == []
    else:
        assert Task.objects.get(pk=assert_answered(outcome)["task_id"]).from_name == recorded


# tool -> (its call with the member's alias left out, caller -> None: answered as a-coder, the alias
# filled in from a binding of exactly one alias; else the refusal's code). A pattern fills in nothing,
# and an unbound token is then nobody: no member of the group room, no owner of it.
MEMBER_LEFT_OUT: dict[str, tuple[dict[str, Any], dict[str, str | None]]] = {
    "channel_read": (
        {"channel_id": "@room"},
        {"bound": None, "pattern": "not_a_member", "unbound": "not_a_member"},
    ),
    "channel_configure": (
        {"channel_id": "@room", "description": "filled in"},
        {"bound": None, "pattern": "permission_denied", "unbound": "permission_denied"},
    ),
}
MEMBER_LEFT_OUT_CASES = [
    pytest.param(tool, caller, policy, id=f"{tool}-{caller}-{policy}")
    for tool, (_, answers) in MEMBER_LEFT_OUT.items()
    for caller in answers
    for policy in POLICIES
]


def check_member_left_out(client: Client, sides: Sides, tool: str, caller: str, policy: str) -> None:
    side = sides[policy]
    template, answers = MEMBER_LEFT_OUT[tool]

    outcome = invoke(client, "rest", side.tokens[caller], tool, side.value(template))

    if answers[caller] is not None:
        assert outcome.response.status_code == 403 and outcome.body["error"] == answers[caller], outcome.body
        assert "zebra" not in json.dumps(outcome.body)
        assert Channel.objects.get(pk=side.room).description == ""
    elif tool == "channel_read":
        assert any("zebra" in post["content"] for post in assert_answered(outcome)["posts"])
    else:
        assert assert_answered(outcome)["description"] == "filled in"
        assert AuditEntry.objects.filter(
            network_id=side.network.pk, action="channel.configured", actor__endswith=" as a-coder"
        ).exists()


# --- the tests, each in a rolled-back transaction ---------------------------------------------------


@pytest.fixture(scope="class")
def rolled_back_sides(django_db_setup: None, django_db_blocker: Any) -> Iterator[Sides]:
    with django_db_blocker.unblock(), rolled_back_data(build_sides) as sides:
        yield sides


@pytest.mark.django_db
class TestIdentities:
    @pytest.fixture
    def sides(self, rolled_back_sides: Sides) -> Sides:
        return rolled_back_sides

    @pytest.mark.parametrize(("transport", "tool", "caller", "policy"), CASES)
    def test_every_tool_answers_each_caller_as_documented(
        self, client: Client, sides: Sides, transport: str, tool: str, caller: str, policy: str
    ) -> None:
        check(client, sides, transport, tool, caller, policy)

    @pytest.mark.parametrize("policy", POLICIES)
    @pytest.mark.parametrize("caller", SENDER_LEFT_OUT)
    @pytest.mark.parametrize("transport", TRANSPORTS)
    def test_a_sender_left_out_is_filled_in(
        self, client: Client, sides: Sides, transport: str, caller: str, policy: str
    ) -> None:
        check_sender_left_out(client, sides, transport, caller, policy)

    @pytest.mark.parametrize("transport", TRANSPORTS)
    def test_an_unbound_token_of_a_strict_network_signs_as_itself(
        self, client: Client, sides: Sides, transport: str
    ) -> None:
        side = sides.strict
        arguments = {"alias": "a-helper", "message": "signed", "from_session": "token:strict-unbound"}

        body = assert_answered(invoke(client, transport, side.tokens["unbound"], "send_message", arguments))

        assert InboxMessage.objects.get(pk=body["message_id"]).from_session == "token:strict-unbound"

    @pytest.mark.parametrize(("tool", "caller", "policy"), MEMBER_LEFT_OUT_CASES)
    def test_a_member_alias_left_out_is_filled_in_from_a_single_binding(
        self, client: Client, sides: Sides, tool: str, caller: str, policy: str
    ) -> None:
        check_member_left_out(client, sides, tool, caller, policy)


# --- the matrix covers everything ------------------------------------------------------------------


def test_the_identity_matrix_covers_every_tool_and_the_specs_declare_its_callers() -> None:
    assert set(CALLS) == set(EXPECTED) == {tool.name for tool in TOOLS}
    for tool, rows in EXPECTED.items():
        assert all(len(row.split()) == len(CALLERS) for row in rows), tool
        assert {answer for row in rows for answer in row.split()} <= {"ok", *CODES}, tool
    declared = {
        tool.name: {name: (caller.speaks.value, caller.fill) for name, caller in tool.callers.items()}
        for tool in TOOLS
        if tool.callers
    }
    assert declared == CALLER_ARGUMENTS
    # Every call names a-coder where it names its caller.
    for tool, arguments in CALLS.items():
        for name in CALLER_ARGUMENTS.get(tool, {}):
            assert arguments[name] == "a-coder", (tool, name)
