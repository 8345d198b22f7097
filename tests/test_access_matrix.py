"""The access matrix, through the public surfaces: MCP (POST /mcp), REST (/api/v1/), the dashboard's
forms, /ws/dashboard and /events/{alias}.

1. A member of network A can neither read nor touch anything of network B: every tool, aimed at B's
   objects (its task ids, message ids, aliases, network id), is refused or answers with A's data only,
   and B's rows are exactly what they were.
2. A viewer is refused every write, and nothing is written. It reads, as no agent: naming the alias
   that reads (an inbox's, a channel member's, search's) is refused alias_not_yours.

Each refusal has a control: the same call by someone allowed (a member of B, a member of A) succeeds
and shows B's secrets or changes the rows, so a refusal here is the rule at work, not a broken call.

Speed: both networks are built once per class, not once per test. /mcp, the REST inbox, SSE and
the websocket read in pool threads on connections of their own, so their class builds them
committed (and flushes at the end, as a transactional test would); rows a test adds or changes
there are put back after it. Everything else runs in the usual rolled-back transaction per test,
over data built in a class-wide transaction that is rolled back at the end (Django's setUpTestData).
tests/helpers/access.py holds the calling and the watching (the identity tests share them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.test import AsyncClient, Client
from django.urls import resolve

from hub_agents.models import AgentSession, Network, Node, NodeCommand
from hub_agents.services import membership_set, network_create, token_authenticate, token_create
from hub_api.agents import urlpatterns as agent_urlpatterns
from hub_api.budgets import urlpatterns as budget_urlpatterns
from hub_api.caps import urlpatterns as cap_urlpatterns
from hub_api.channels import urlpatterns as channel_urlpatterns
from hub_api.schedules import urlpatterns as schedule_urlpatterns
from hub_api.search import urlpatterns as search_urlpatterns
from hub_api.tasks import urlpatterns as task_urlpatterns
from hub_api.webhooks import urlpatterns as webhook_urlpatterns
from hub_approvals.models import Approval, ApprovalRule
from hub_channels.models import Channel
from hub_schedules.models import Schedule
from hub_search.models import SearchEntry
from hub_tasks.models import Budget, Cap, Completion, InboxMessage, Question, Task
from hub_tools.tools import CONTRACT_TOOLS, TOOLS, TOOLS_BY_NAME
from hub_webhooks.models import Delivery, Subscription
from hub_webhooks.services import webhook_create, webhook_set_active
from tests.helpers.access import (
    API,
    ROUTES,
    WEBHOOK_ROUTES,
    assert_answered,
    assert_tool_refused,
    committed_data,
    fingerprint,
    invoke,
    params,
    rest_request,
    rolled_back_data,
    rows_restored,
)
from tests.helpers.calls import (
    ask_operator,
    budget_set,
    cancel_task,
    cap_set,
    channel_create,
    channel_post,
    claim_task,
    node_command,
    report_completion,
    report_node,
    report_status,
    schedule_create,
    schedule_pause,
    send_message,
    send_reply,
    send_task,
)
from tests.helpers.contract import EXTENSION_TOOLS, assert_contract_first
from tests.helpers.dashboard import browser_of, signed_in, websocket
from tests.helpers.rest import assert_refused

NODE_AGENT = {"runtime": "command", "concurrency": 1, "running": 0}  # an agent a node hosts, less its alias
SECRET = "B-SECRET"  # in every text of network B: none of it may reach a caller from A
VIEWER_REFUSAL = "Your role in network {} is viewer: it may read but not write."

# From the specs: a new tool is in the matrix's read or write set by what its spec says, and the
# checks below fail until the matrix has its cases.
READ_TOOLS = {tool.name for tool in TOOLS if tool.read_only}
# Writes only a network's owners and admins may make: their controls call as A's (or B's) admin.
ADMIN_TOOLS = {"decide_approval", "node_command", "schedule_create", "schedule_pause", "schedule_resume"}
ADMIN_TOOLS |= {"schedule_run_now", "schedule_delete", "cap_set", "cap_delete"}
ADMIN_TOOLS |= {"budget_set", "budget_delete"}
WRITE_TOOLS = {tool.name for tool in TOOLS if not tool.read_only}

# --- the two networks ------------------------------------------------------------------------------


@dataclass
class World:
    a: Network
    b: Network
    a_member: str  # raw tokens
    a_viewer: str
    b_member: str
    mixed: str  # a user token: viewer in A, member in B
    a_live: str  # delivered to a-coder, its task message pending in the inbox
    a_cancelled: str
    a_open: str  # an open task in A's pool that a-coder's skills cover
    a_held: str  # an open task a-coder claimed: acked, its lease running (any call of a-coder's renews it)
    a_question: str  # a-coder's unanswered question about a_live
    a_admin: str  # raw token of an admin of A (who may decide A's approvals)
    a_approval: str  # a message to a-gated, held by A's rule
    b_live: str  # delivered to b-coder and pending: any write aimed at it would change it
    b_cancelled: str  # retryable
    b_done: str  # replied, with a completion
    b_message: str  # a plain message to b-coder
    b_open: str  # an open task in B's pool, which b-coder (and a-coder, had it reported in B) could claim
    b_question: str  # b-coder's unanswered question about b_live
    b_admin: str
    b_approval: str  # a message to b-gated, held by B's rule
    a_channel: str  # a group channel a-coder owns, a-helper a member, with a post of a-coder's
    a_news: str  # a broadcast channel a-coder owns, with a post of a-coder's: every reader of A reads it
    b_channel: str  # a group channel b-lead owns, b-coder a member, with a post of b-coder's
    a_webhook: int  # A's webhooks, one active and one disabled
    a_webhook_off: int
    b_webhook: int  # B's, active, with a delivery; its URL, alias and the delivery's answer hold B's secret
    b_webhook_off: int  # B's, disabled
    b_webhook_secret: str  # its signing secret: shown once, to B's admin, never to anyone of A
    a_command: str  # A's admin's pause of a-coder on a-node, not yet answered
    b_command: str  # B's admin's tail of b_live on B's node, not yet answered
    a_schedule: str  # A's schedules: one running, one paused
    a_schedule_paused: str
    b_schedule: str  # B's, running; its name holds B's secret
    b_schedule_paused: str  # B's, paused
    a_cap: str  # A's cap on a skill no task needs (its name says a-coder, whose data a reader finds)
    b_cap: str  # B's, on a skill whose name holds B's secret
    a_budget: str  # A's budget of a-coder's day
    b_budget: str  # B's, of an agent whose alias holds B's secret
    users: dict[str, AbstractBaseUser]

    def value(self, template: Any) -> Any:
        """Arguments are written with "@field" placeholders for this world's ids ("@a", "@b": networks)."""
        if isinstance(template, dict):
            return {key: self.value(item) for key, item in template.items()}
        if isinstance(template, str) and template.startswith("@"):
            found = getattr(self, template[1:])
            return found.pk if isinstance(found, Network) else found
        return template

    def url(self, template: str) -> str:
        return re.sub(r"@\w+", lambda match: self.value(match.group(0)), template)

    def b_secrets(self, sent: Any = None) -> list[str]:
        """Strings only B's data holds, less those the caller sent itself (a refusal may echo them)."""
        echoed = sent if isinstance(sent, str) else json.dumps(sent or {})
        ids = [
            self.b.pk,
            *Task.objects.filter(network=self.b).values_list("pk", flat=True),
            *InboxMessage.objects.filter(network=self.b).values_list("pk", flat=True),
            *Completion.objects.filter(network=self.b).values_list("pk", flat=True),
            *Question.objects.filter(network=self.b).values_list("pk", flat=True),
            *Approval.objects.filter(network=self.b).values_list("pk", flat=True),
            *Channel.objects.filter(network=self.b).values_list("pk", flat=True),
            *AgentSession.objects.filter(network=self.b).values_list("resume_id", flat=True),
            *Subscription.objects.filter(network=self.b).values_list("secret", flat=True),
            *NodeCommand.objects.filter(network=self.b).values_list("command_id", flat=True),
            *Schedule.objects.filter(network=self.b).values_list("pk", flat=True),
        ]
        return [secret for secret in [SECRET, *ids] if secret not in echoed]


def build_world() -> World:
    a, b = network_create(name="alpha")[0], network_create(name="beta")[0]
    a_member, a_viewer = (token_create(network=a, role=role, name=f"a-{role}")[1] for role in ("member", "viewer"))
    b_member = token_create(network=b, role="member", name="b-member")[1]
    a_agent, b_agent = token_authenticate(raw=a_member), token_authenticate(raw=b_member)

    for alias in ("a-coder", "a-helper"):
        report_status(
            actor=a_agent, resume_id=f"{alias}-resume", alias=alias, status="idle", hostname="a-host", skills=["python"]
        )
    report_node(actor=a_agent, node_id="a-node", host="a-host", agents=[NODE_AGENT | {"alias": "a-coder"}])
    a_live = send_task(actor=a_agent, alias="a-coder", task="A live task", from_session="a-lead")["task_id"]
    a_cancelled = send_task(actor=a_agent, alias="a-coder", task="A old task", from_session="a-lead")["task_id"]
    cancel_task(actor=a_agent, task_id=a_cancelled)
    send_message(actor=a_agent, alias="a-coder", message="A message")
    a_open, a_held = (
        send_task(
            actor=a_agent, alias="pool", task=f"A {name}", from_session="a-lead", required_skills=["python"],
            lease_seconds=600,
        )["task_id"]
        for name in ("open task", "held task")
    )  # fmt: skip
    claim_task(actor=a_agent, task_id=a_held, alias="a-coder")
    a_question = ask_operator(actor=a_agent, task_id=a_live, question="A: which way?")["question_id"]
    ApprovalRule.objects.create(network=a, name="A gate", tool="send_message", target_alias="a-gated")
    a_approval = send_message(actor=a_agent, alias="a-gated", message="A gated message")["approval_id"]
    report_completion(actor=a_agent, alias="a-coder", task="A earlier job", result="A result")
    a_channel = channel_create(actor=a_agent, name="a-room", alias="a-coder", members=["a-helper"])["channel_id"]
    channel_post(actor=a_agent, channel_id=a_channel, alias="a-coder", content="A post")
    a_news = channel_create(actor=a_agent, name="a-news", alias="a-coder", type="broadcast")["channel_id"]
    channel_post(actor=a_agent, channel_id=a_news, alias="a-coder", content="A news")

    for alias in ("b-coder", "b-lead", "report"):
        report_status(
            actor=b_agent,
            resume_id=f"{alias}-b-resume",
            alias=alias,
            status="working",
            task=f"{SECRET} {alias} is busy",
            output=f"{SECRET} output of {alias}",
            server=f"{SECRET}-server",
            hostname=f"{SECRET}-host",
            node_id=f"{SECRET}-node",
            skills=["python"],
        )
    report_node(
        actor=b_agent, node_id=f"{SECRET}-node", host=f"{SECRET}-host", agents=[NODE_AGENT | {"alias": "b-coder"}]
    )
    b_live = send_task(
        actor=b_agent, alias="b-coder", task=f"{SECRET} live task", context=f"{SECRET} context", from_session="b-lead"
    )["task_id"]
    b_cancelled = send_task(actor=b_agent, alias="b-coder", task=f"{SECRET} old task", from_session="b-lead")
    cancel_task(actor=b_agent, task_id=b_cancelled["task_id"], reason=f"{SECRET} reason")
    b_done = send_task(actor=b_agent, alias="b-coder", task=f"{SECRET} finished task", from_session="b-lead")
    report_completion(actor=b_agent, alias="b-coder", task=b_done["task_id"], result=f"{SECRET} result")
    b_message = send_message(actor=b_agent, alias="b-coder", message=f"{SECRET} message", from_session="b-lead")
    send_reply(actor=b_agent, alias="b-lead", text=f"{SECRET} reply", from_session="b-coder")
    send_message(actor=b_agent, alias="report", message=f"{SECRET} for the alias named report")
    b_open = send_task(
        actor=b_agent, alias="pool", task=f"{SECRET} open task", from_session="b-lead", required_skills=["python"]
    )["task_id"]
    b_question = ask_operator(actor=b_agent, task_id=b_live, question=f"{SECRET} question", options=["yes", "no"])
    ApprovalRule.objects.create(network=b, name=f"{SECRET} gate", tool="send_message", target_alias="b-gated")
    b_approval = send_message(actor=b_agent, alias="b-gated", message=f"{SECRET} gated message")["approval_id"]
    b_channel = channel_create(
        actor=b_agent, name=f"{SECRET}-room", alias="b-lead", members=["b-coder"], description=f"{SECRET} topic"
    )["channel_id"]
    channel_post(actor=b_agent, channel_id=b_channel, alias="b-coder", content=f"{SECRET} post")

    a_admin, b_admin = (token_create(network=net, role="admin", name=f"{net.name[0]}-admin")[1] for net in (a, b))
    a_boss, b_boss = token_authenticate(raw=a_admin), token_authenticate(raw=b_admin)
    a_command = node_command(actor=a_boss, node_id="a-node", kind="pause", alias="a-coder")["command"]
    b_command = node_command(actor=b_boss, node_id=f"{SECRET}-node", kind="tail", alias="b-coder", task_id=b_live)[
        "command"
    ]
    public = "https://93.184.215.14"  # an address webhooks may reach, needing no name lookup
    a_webhook, _ = webhook_create(actor=a_boss, network_id=a.pk, url=f"{public}/a-hook")
    a_webhook_off, _ = webhook_create(actor=a_boss, network_id=a.pk, url=f"{public}/a-hook-off")
    b_webhook, b_webhook_secret = webhook_create(
        actor=b_boss, network_id=b.pk, url=f"{public}/{SECRET}-hook", alias=f"{SECRET}-alias", event_types=["new_task"]
    )
    b_webhook_off, _ = webhook_create(actor=b_boss, network_id=b.pk, url=f"{public}/{SECRET}-hook-off")
    for boss, off in ((a_boss, a_webhook_off), (b_boss, b_webhook_off)):
        webhook_set_active(actor=boss, subscription_id=off.pk, active=False)
    Delivery.objects.create(
        subscription=b_webhook, event_seq=1, event_type="new_task", outcome="failed", status_code=500,
        response_excerpt=f"{SECRET} receiver's answer",
    )  # fmt: skip

    a_schedule, a_schedule_paused, b_schedule, b_schedule_paused = (
        schedule_create(actor=boss, name=name, alias=alias, task=f"{name} review", cron="0 2 * * *")["schedule"][
            "schedule_id"
        ]
        for boss, name, alias in (
            (a_boss, "a-nightly", "a-coder"),
            (a_boss, "a-paused", "a-coder"),
            (b_boss, f"{SECRET}-nightly", "b-coder"),
            (b_boss, f"{SECRET}-paused", "b-coder"),
        )
    )
    schedule_pause(actor=a_boss, schedule_id=a_schedule_paused)
    schedule_pause(actor=b_boss, schedule_id=b_schedule_paused)
    a_cap, b_cap = (
        cap_set(actor=boss, scope="skill", value=value, limit=3)["cap"]["cap_id"]
        for boss, value in ((a_boss, "a-coder-gpu"), (b_boss, f"{SECRET}-gpu"))
    )
    a_budget, b_budget = (
        budget_set(actor=boss, alias=alias, period="day", limit_usd=5.0)["budget"]["budget_id"]
        for boss, alias in ((a_boss, "a-coder"), (b_boss, f"{SECRET}-agent"))
    )

    users = {}
    roles_of = {
        "a-operator": {a: "member"},
        "a-admin": {a: "admin"},
        "a-watcher": {a: "viewer"},
        "mixed": {a: "viewer", b: "member"},
        "b-operator": {b: "member"},
        "b-admin": {b: "admin"},
    }
    for username, roles in roles_of.items():
        users[username] = get_user_model().objects.create_user(username)  # no password: no slow hashing
        for network, role in roles.items():
            membership_set(user=users[username], network=network, role=role)
    return World(
        a=a,
        b=b,
        a_member=a_member,
        a_viewer=a_viewer,
        b_member=b_member,
        mixed=token_create(user=users["mixed"])[1],
        a_live=a_live,
        a_cancelled=a_cancelled,
        a_open=a_open,
        a_held=a_held,
        a_question=a_question,
        a_admin=a_admin,
        a_approval=a_approval,
        b_live=b_live,
        b_cancelled=b_cancelled["task_id"],
        b_done=b_done["task_id"],
        b_message=b_message["message_id"],
        b_open=b_open,
        b_question=b_question["question_id"],
        b_admin=b_admin,
        b_approval=b_approval,
        a_channel=a_channel,
        a_news=a_news,
        b_channel=b_channel,
        a_webhook=a_webhook.pk,
        a_webhook_off=a_webhook_off.pk,
        b_webhook=b_webhook.pk,
        b_webhook_off=b_webhook_off.pk,
        b_webhook_secret=b_webhook_secret,
        a_command=a_command["command_id"],
        b_command=b_command["command_id"],
        a_schedule=a_schedule,
        a_schedule_paused=a_schedule_paused,
        b_schedule=b_schedule,
        b_schedule_paused=b_schedule_paused,
        a_cap=a_cap,
        b_cap=b_cap,
        a_budget=a_budget,
        b_budget=b_budget,
        users=users,
    )


# --- what an answer holds --------------------------------------------------------------------------


def network_ids_in(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        if "network_id" in value:
            yield value["network_id"]
        for inner in value.values():
            yield from network_ids_in(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from network_ids_in(inner)


def leaked(world: World, answer: Any, sent: Any = None) -> list[str]:
    dumped = answer if isinstance(answer, str) else json.dumps(answer)
    return [secret for secret in world.b_secrets(sent) if secret in dumped]


# --- 1. a member of A, aimed at B: the cases -------------------------------------------------------

# case id -> (tool, arguments, expected refusal code; None: answered, with nothing of B in it)
CROSS: dict[str, tuple[str, dict[str, Any], str | None]] = {
    # reads scoped to the caller answer with A's data only
    "get_all_status": ("get_all_status", {}, None),
    "get_session_status-b_alias": ("get_session_status", {"alias": "b-coder"}, None),
    "get_session_status-report": ("get_session_status", {"alias": "report"}, None),
    "get_inbox-b_alias": ("get_inbox", {"alias": "b-coder"}, None),
    "get_completions": ("get_completions", {}, None),
    "get_completions-b_alias": ("get_completions", {"alias": "b-coder"}, None),
    "list_tasks": ("list_tasks", {}, None),
    "list_tasks-b_alias": ("list_tasks", {"alias": "b-coder", "from_name": "b-lead"}, None),
    "get_task-b_live": ("get_task", {"task_id": "@b_live"}, "task_not_found"),
    "get_task-b_done": ("get_task", {"task_id": "@b_done"}, "task_not_found"),
    # reads naming B's network
    "get_all_status-network_b": ("get_all_status", {"network_id": "@b"}, "permission_denied"),
    "get_session_status-network_b": (
        "get_session_status",
        {"alias": "b-coder", "network_id": "@b"},
        "permission_denied",
    ),
    "get_inbox-network_b": ("get_inbox", {"alias": "b-coder", "network_id": "@b"}, "permission_denied"),
    "get_completions-network_b": ("get_completions", {"network_id": "@b"}, "permission_denied"),
    "list_tasks-network_b": ("list_tasks", {"network_id": "@b"}, "permission_denied"),
    # writes aimed at B's network or objects
    "report_status-network_b": (
        "report_status",
        {"resume_id": "b-coder-b-resume", "alias": "b-coder", "status": "idle", "task": "@b_live", "network_id": "@b"},
        "permission_denied",
    ),
    "report_status-b_resume_id": (  # B's resume id, alias and task, sent in A: B's session and task stay
        "report_status",
        {"resume_id": "b-coder-b-resume", "alias": "b-coder", "status": "working", "task": "@b_live"},
        None,
    ),
    "report_completion-network_b": (
        "report_completion",
        {"alias": "b-coder", "task": "@b_live", "result": "stolen", "network_id": "@b"},
        "permission_denied",
    ),
    "report_completion-b_task": ("report_completion", {"alias": "b-coder", "task": "@b_live", "result": "x"}, None),
    "ack_inbox-b_task_message": ("ack_inbox", {"alias": "b-coder", "message_id": "@b_live"}, "message_not_found"),
    "ack_inbox-b_message": ("ack_inbox", {"alias": "b-coder", "message_id": "@b_message"}, "message_not_found"),
    "send_task-network_b": (
        "send_task",
        {"alias": "b-coder", "task": "intrusion", "network_id": "@b"},
        "permission_denied",
    ),
    "send_task-b_parent": (
        "send_task",
        {"alias": "b-coder", "task": "intrusion", "parent_task_id": "@b_live"},
        "parent_task_not_found",
    ),
    "send_message-network_b": (
        "send_message",
        {"alias": "b-coder", "message": "intrusion", "network_id": "@b"},
        "permission_denied",
    ),
    "send_reply-b_task": (
        "send_reply",
        {"alias": "b-lead", "text": "intrusion", "in_reply_to": "@b_live", "status": "failed"},
        "task_not_found",
    ),
    "send_reply-b_message": (
        "send_reply",
        {"alias": "b-lead", "text": "intrusion", "in_reply_to": "@b_message"},
        "task_not_found",
    ),
    "send_reply-network_b": (
        "send_reply",
        {"alias": "b-lead", "text": "intrusion", "network_id": "@b"},
        "permission_denied",
    ),
    "send_ack-b_live": ("send_ack", {"task_id": "@b_live"}, "task_not_found"),
    "retry_task-b_cancelled": ("retry_task", {"task_id": "@b_cancelled"}, "task_not_found"),
    "cancel_task-b_live": ("cancel_task", {"task_id": "@b_live", "reason": "intrusion"}, "task_not_found"),
    "reassign_task-b_live": ("reassign_task", {"task_id": "@b_live", "new_alias": "b-lead"}, "task_not_found"),
    "broadcast-network_b": ("broadcast", {"message": "intrusion", "network_id": "@b"}, "permission_denied"),
    "broadcast": ("broadcast", {"message": "A only"}, None),
    # the open pool: B's agents have the skill too, and B's pool holds an open task
    "find_agents": ("find_agents", {"skill": "python"}, None),
    "find_agents-network_b": ("find_agents", {"skill": "python", "network_id": "@b"}, "permission_denied"),
    "list_open_tasks": ("list_open_tasks", {}, None),
    "list_open_tasks-b_alias": ("list_open_tasks", {"alias": "b-coder", "skill": "python"}, None),
    "list_open_tasks-network_b": ("list_open_tasks", {"network_id": "@b"}, "permission_denied"),
    "claim_task-b_open": ("claim_task", {"task_id": "@b_open", "alias": "b-coder"}, "task_not_found"),
    "claim_task-network_b": (
        "claim_task",
        {"task_id": "@b_open", "alias": "b-coder", "network_id": "@b"},
        "permission_denied",
    ),
    # questions to a person: B's task has an unanswered question
    "list_questions": ("list_questions", {}, None),
    "list_questions-b_task": ("list_questions", {"task_id": "@b_live"}, None),
    "list_questions-network_b": ("list_questions", {"network_id": "@b"}, "permission_denied"),
    "ask_operator-b_live": ("ask_operator", {"task_id": "@b_live", "question": "intrusion?"}, "task_not_found"),
    "answer_question-b_question": (
        "answer_question",
        {"question_id": "@b_question", "answer": "intrusion"},
        "question_not_found",
    ),
    # approvals: B holds a message for approval
    "list_approvals": ("list_approvals", {}, None),
    "get_thread-b_live": ("get_thread", {"task_id": "@b_live"}, "task_not_found"),
    # channels: B has a channel (its name, description and post hold B's secret)
    "channel_list": ("channel_list", {}, None),
    "channel_list-b_alias": ("channel_list", {"alias": "b-coder"}, None),
    "channel_list-network_b": ("channel_list", {"network_id": "@b"}, "permission_denied"),
    "channel_create": ("channel_create", {"name": "fresh-room", "alias": "b-lead"}, None),
    "channel_create-network_b": (
        "channel_create",
        {"name": "intrusion", "alias": "b-lead", "network_id": "@b"},
        "permission_denied",
    ),
    "channel_info-b_channel": ("channel_info", {"channel_id": "@b_channel"}, "channel_not_found"),
    "channel_read-b_channel": ("channel_read", {"channel_id": "@b_channel", "alias": "b-coder"}, "channel_not_found"),
    "channel_join-b_channel": ("channel_join", {"channel_id": "@b_channel", "alias": "b-spy"}, "channel_not_found"),
    "channel_leave-b_channel": ("channel_leave", {"channel_id": "@b_channel", "alias": "b-coder"}, "channel_not_found"),
    "channel_configure-b_channel": (
        "channel_configure",
        {"channel_id": "@b_channel", "alias": "b-lead", "retention_max_posts": 1, "description": "intrusion"},
        "channel_not_found",
    ),
    "channel_post-b_channel": (
        "channel_post",
        {"channel_id": "@b_channel", "alias": "b-coder", "content": "intrusion"},
        "channel_not_found",
    ),
    # search: B's words find nothing of B's; words both networks have find A's rows only
    "search": ("search", {"query": SECRET}, None),
    "search-task": ("search", {"query": "task"}, None),
    "search-network_b": ("search", {"query": "task", "network_id": "@b"}, "permission_denied"),
    "list_approvals-b_approval": ("list_approvals", {"approval_id": "@b_approval"}, None),
    "list_approvals-network_b": ("list_approvals", {"network_id": "@b"}, "permission_denied"),
    "decide_approval-b_approval": (
        "decide_approval",
        {"approval_id": "@b_approval", "decision": "approve"},
        "approval_not_found",
    ),
    # nodes: B's node (its id and host hold B's secret) hosts b-coder
    "list_nodes": ("list_nodes", {}, None),
    "list_nodes-network_b": ("list_nodes", {"network_id": "@b"}, "permission_denied"),
    "report_node-network_b": (
        "report_node",
        {"node_id": f"{SECRET}-node", "slots_used": 1, "network_id": "@b"},
        "permission_denied",
    ),
    "report_node-b_node": (  # B's node id and alias, sent in A: a node of A's own; B's node and b-coder stay
        "report_node",
        {"node_id": f"{SECRET}-node", "agents": [NODE_AGENT | {"alias": "b-coder"}]},
        None,
    ),
    # commands to nodes: B's command (a tail of b_live on B's node)
    "node_commands": ("node_commands", {}, None),
    "node_commands-b_command": ("node_commands", {"command_id": "@b_command"}, None),
    "node_commands-network_b": ("node_commands", {"network_id": "@b"}, "permission_denied"),
    "node_command-network_b": (
        "node_command",
        {"node_id": f"{SECRET}-node", "kind": "drain", "network_id": "@b"},
        "permission_denied",
    ),
    "node_command_ack-b_command": ("node_command_ack", {"command_id": "@b_command", "ok": True}, "command_not_found"),
    # schedules: B's, one running and one paused (their names and tasks hold B's secret)
    "schedule_list": ("schedule_list", {}, None),
    "schedule_list-b_schedule": ("schedule_list", {"schedule_id": "@b_schedule"}, None),
    "schedule_list-network_b": ("schedule_list", {"network_id": "@b"}, "permission_denied"),
    "schedule_create-network_b": (
        "schedule_create",
        {"name": "intrusion", "alias": "b-coder", "task": "intrusion", "cron": "* * * * *", "network_id": "@b"},
        "permission_denied",
    ),
    "schedule_pause-b_schedule": ("schedule_pause", {"schedule_id": "@b_schedule"}, "schedule_not_found"),
    "schedule_resume-b_schedule_paused": (
        "schedule_resume",
        {"schedule_id": "@b_schedule_paused"},
        "schedule_not_found",
    ),
    "schedule_run_now-b_schedule": ("schedule_run_now", {"schedule_id": "@b_schedule"}, "schedule_not_found"),
    "schedule_delete-b_schedule": ("schedule_delete", {"schedule_id": "@b_schedule"}, "schedule_not_found"),
    # caps: B's, on a skill whose name holds B's secret
    "cap_list": ("cap_list", {}, None),
    "cap_list-network_b": ("cap_list", {"network_id": "@b"}, "permission_denied"),
    "cap_set-network_b": ("cap_set", {"scope": "all", "limit": 1, "network_id": "@b"}, "permission_denied"),
    "cap_delete-b_cap": ("cap_delete", {"cap_id": "@b_cap"}, "cap_not_found"),
    # budgets: B's, of an agent whose alias holds B's secret
    "budget_list": ("budget_list", {}, None),
    "budget_list-network_b": ("budget_list", {"network_id": "@b"}, "permission_denied"),
    "budget_set-network_b": ("budget_set", {"period": "day", "limit_usd": 1, "network_id": "@b"}, "permission_denied"),
    "budget_delete-b_budget": ("budget_delete", {"budget_id": "@b_budget"}, "budget_not_found"),
}


def assert_exactly_as_a_sees_it(world: World, tool: str, arguments: dict[str, Any], body: dict[str, Any]) -> None:
    """An answered call holds A's rows and counts only: what B would add (rows, counts) is compared."""
    a = world.a.pk
    assert set(network_ids_in(body)) <= {a}, body
    alias = arguments.get("alias")
    sessions = AgentSession.objects.filter(network_id=a)
    tasks = set(Task.objects.filter(network_id=a).values_list("pk", flat=True))
    pending = InboxMessage.objects.filter(network_id=a, to_alias=alias or "", acked_at__isnull=True)
    completions = Completion.objects.filter(network_id=a)
    if alias:
        completions = completions.filter(session_name=alias)
    if tool == "get_all_status":
        assert sorted(row["alias"] for row in body["sessions"]) == sorted(sessions.values_list("alias", flat=True))
        assert sum(row["count"] for row in body["summary"]) == sessions.count()
    elif tool == "get_session_status":
        own = sessions.filter(alias=alias).values_list("alias", flat=True).first()
        assert (body["session"] or {}).get("alias") == own
        assert body["inbox_pending"] == pending.count()
        assert {row["id"] for row in body["recent_completions"]} == set(completions.values_list("id", flat=True))
    elif tool == "get_inbox":
        assert {row["id"] for row in body["messages"]} == set(pending.values_list("id", flat=True))
    elif tool == "get_completions":
        assert {row["id"] for row in body["completions"]} == set(completions.values_list("id", flat=True))
    elif tool == "list_tasks":
        assert sum(row["count"] for row in body["stats"]) == len(tasks)
        assert {row["task_id"] for row in body["tasks"]} <= tasks
    elif tool == "report_status":  # a session of A's own; B's b-coder has messages waiting, A's none
        assert body["inbox_count"] == pending.count()
    elif tool == "report_completion":  # recorded in A, closing nothing: B's task is not A's
        assert body["task_id"] is None
    elif tool == "broadcast":
        assert body["recipients"] == sessions.count()
    elif tool == "find_agents":
        skilled = [session.alias for session in sessions if arguments["skill"] in (session.skills or [])]
        assert sorted(row["alias"] for row in body["agents"]) == sorted(skilled)
    elif tool == "list_open_tasks":  # A's pool; with an alias, what A's session of that alias could claim
        pool = list(Task.objects.filter(network_id=a, status="created", to_name="pool", required_skills__isnull=False))
        if arguments.get("skill"):
            pool = [task for task in pool if arguments["skill"] in task.required_skills]
        if alias:
            reported = list(sessions.filter(alias=alias).values_list("skills", flat=True))
            pool = [task for task in pool if reported and set(task.required_skills) <= set(reported[0] or [])]
        assert {row["task_id"] for row in body["tasks"]} == {task.pk for task in pool}
    elif tool == "list_questions":
        questions = Question.objects.filter(network_id=a)
        if arguments.get("task_id"):
            questions = questions.filter(task_id=arguments["task_id"])
        assert {row["question_id"] for row in body["questions"]} == set(questions.values_list("pk", flat=True))
    elif tool == "list_approvals":
        approvals = Approval.objects.filter(network_id=a)
        if arguments.get("approval_id"):
            approvals = approvals.filter(pk=arguments["approval_id"])
        assert {row["approval_id"] for row in body["approvals"]} == set(approvals.values_list("pk", flat=True))
    elif tool == "search":  # every entry of A's that has all the words, and nothing else
        words = set(arguments["query"].lower().split())
        entries = SearchEntry.objects.filter(network_id=a)
        found = {(e.kind, e.object_id) for e in entries if words <= set(e.terms.split())}
        assert {(row["kind"], row["id"]) for row in body["results"]} == found
    elif tool == "channel_list":  # A's channels (of which the alias is a member)
        channels = Channel.objects.filter(network_id=a)
        if alias:
            channels = channels.filter(members__alias=alias)
        assert {row["channel_id"] for row in body["channels"]} == set(channels.values_list("pk", flat=True))
    elif tool == "channel_create":  # a channel of A's own, whatever B has
        assert body["network_id"] == a and body["channel_id"] != world.b_channel
    elif tool == "list_nodes":
        nodes = Node.objects.filter(network_id=a)
        assert sorted(row["node_id"] for row in body["nodes"]) == sorted(nodes.values_list("node_id", flat=True))
    elif tool == "report_node":  # a node of A's own, under the id B's has
        assert Node.objects.filter(network_id=a, node_id=body["node_id"]).exists()
    elif tool == "node_commands":
        commands = NodeCommand.objects.filter(network_id=a)
        if arguments.get("command_id"):
            commands = commands.filter(command_id=arguments["command_id"])
        assert sorted(row["command_id"] for row in body["commands"]) == sorted(
            commands.values_list("command_id", flat=True)
        )
    elif tool == "schedule_list":
        schedules = Schedule.objects.filter(network_id=a)
        if arguments.get("schedule_id"):
            schedules = schedules.filter(pk=arguments["schedule_id"])
        assert {row["schedule_id"] for row in body["schedules"]} == set(schedules.values_list("pk", flat=True))
    elif tool == "cap_list":
        assert {row["cap_id"] for row in body["caps"]} == set(
            Cap.objects.filter(network_id=a).values_list("pk", flat=True)
        )
    elif tool == "budget_list":
        assert {row["budget_id"] for row in body["budgets"]} == set(
            Budget.objects.filter(network_id=a).values_list("pk", flat=True)
        )
    else:
        raise AssertionError(f"no check for an answered {tool}")


def check_cross(client: Client, world: World, transport: str, case_id: str) -> None:
    tool, template, refusal = CROSS[case_id]
    arguments = world.value(template)
    b_before = fingerprint(world.b.pk)

    outcome = invoke(client, transport, world.a_member, tool, arguments)

    if refusal is None:
        assert_exactly_as_a_sees_it(world, tool, arguments, assert_answered(outcome))
    else:
        assert_tool_refused(outcome, refusal)
    assert leaked(world, outcome.body, arguments) == []
    assert fingerprint(world.b.pk) == b_before


def check_cross_control(client: Client, world: World, transport: str, case_id: str) -> None:
    """What A was refused is there to take: B's own member reads B's secrets or changes B's rows."""
    tool, template, _ = CROSS[case_id]
    arguments = world.value(template)
    b_before = fingerprint(world.b.pk)

    caller = world.b_admin if tool in ADMIN_TOOLS else world.b_member
    body = assert_answered(invoke(client, transport, caller, tool, arguments))

    if tool in READ_TOOLS:
        assert leaked(world, body, arguments), body
    else:
        assert fingerprint(world.b.pk) != b_before


# The dashboard, signed in as a member of A (or, for the control, of B): (method, path, form)
DASHBOARD_CROSS: dict[str, tuple[str, str, dict[str, str]]] = {
    "task_page": ("get", "/tasks/@b_live/", {}),
    "fleet-network_b": ("get", "/fleet/?network=@b", {}),
    "tasks-network_b": ("get", "/tasks/?network=@b", {}),
    "completions-network_b": ("get", "/completions/?network=@b", {}),
    "retry": ("post", "/tasks/@b_cancelled/retry/", {}),
    "cancel": ("post", "/tasks/@b_live/cancel/", {"reason": "intrusion"}),
    "reassign": ("post", "/tasks/@b_live/reassign/", {"new_alias": "b-lead"}),
    "dispatch-network_b": ("post", "/dispatch/?network=@b", {"alias": "b-coder", "task": "intrusion"}),
    "dispatch-b_parent": ("post", "/dispatch/", {"alias": "b-coder", "task": "intrusion", "parent_task_id": "@b_live"}),
    "broadcast-network_b": ("post", "/broadcast/?network=@b", {"message": "intrusion"}),
    "approvals-network_b": ("get", "/approvals/?network=@b", {}),
    "approve-b_approval": ("post", "/approvals/@b_approval/decide/", {"decision": "approve"}),
    "channels-network_b": ("get", "/channels/?network=@b", {}),
    "channel_page": ("get", "/channels/@b_channel/", {}),
    "channel_post": ("post", "/channels/@b_channel/", {"content": "intrusion", "join": "1"}),
    "schedules-network_b": ("get", "/schedules/?network=@b", {}),
    "schedule_run-b_schedule": ("post", "/schedules/@b_schedule/run/", {}),
    "limits-network_b": ("get", "/limits/?network=@b", {}),
    "cap_delete-b_cap": ("post", "/limits/caps/@b_cap/delete/", {}),
    "budget_delete-b_budget": ("post", "/limits/budgets/@b_budget/delete/", {}),
}
# Forms only a network's owners and admins may send: sent by A's admin (and, for the control, B's).
DASHBOARD_ADMIN_FORMS = {"approve-b_approval", "approve", "schedule_run-b_schedule"}
DASHBOARD_ADMIN_FORMS |= {"cap_delete-b_cap", "cap_set", "cap_delete"}
DASHBOARD_ADMIN_FORMS |= {"budget_delete-b_budget", "budget_set", "budget_delete"}


def dashboard_user(case_id: str, network: str) -> str:
    return f"{network}-admin" if case_id in DASHBOARD_ADMIN_FORMS else f"{network}-operator"


def dashboard_request(world: World, user: str, case_id: str) -> tuple[Any, str]:
    method, path, form = DASHBOARD_CROSS[case_id]
    url, data = world.url(path), world.value(form)
    browser = browser_of(world.users[user])
    response = browser.get(url, follow=True) if method == "get" else browser.post(url, data, follow=True)
    return response, url + json.dumps(data)


# --- 2. a viewer may read and never write: the cases -----------------------------------------------

# tool -> arguments a member of A may send, each of which changes something in A
VIEWER_WRITES: dict[str, dict[str, Any]] = {
    "report_status": {"resume_id": "a-coder-resume", "alias": "a-coder", "status": "working", "task": "@a_live"},
    "report_completion": {"alias": "a-coder", "task": "@a_live", "result": "done by a viewer"},
    "ack_inbox": {"alias": "a-coder", "message_id": "@a_live"},
    "send_task": {"alias": "a-coder", "task": "from a viewer"},
    "send_message": {"alias": "a-coder", "message": "from a viewer"},
    "send_reply": {"alias": "a-lead", "text": "from a viewer", "in_reply_to": "@a_live"},
    "send_ack": {"task_id": "@a_live"},
    "retry_task": {"task_id": "@a_cancelled"},
    "cancel_task": {"task_id": "@a_live", "reason": "a viewer wants it"},
    "reassign_task": {"task_id": "@a_live", "new_alias": "a-helper"},
    "broadcast": {"message": "from a viewer"},
    # A claim by a viewer, as a-coder (who holds a_held, leased): neither a_open nor a_held's lease moves.
    "claim_task": {"task_id": "@a_open", "alias": "a-coder"},
    "ask_operator": {"task_id": "@a_live", "question": "from a viewer?"},
    "answer_question": {"question_id": "@a_question", "answer": "from a viewer"},
    "decide_approval": {"approval_id": "@a_approval", "decision": "approve"},
    "channel_create": {"name": "viewer-room", "alias": "a-coder"},
    "channel_join": {"channel_id": "@a_channel", "alias": "a-newcomer"},
    "channel_leave": {"channel_id": "@a_channel", "alias": "a-helper"},
    "channel_configure": {"channel_id": "@a_channel", "alias": "a-coder", "description": "set by a viewer"},
    "channel_post": {"channel_id": "@a_channel", "alias": "a-coder", "content": "from a viewer"},
    "report_node": {"node_id": "a-node", "slots_total": 1, "slots_used": 1},
    "node_command": {"node_id": "a-node", "kind": "drain"},
    "node_command_ack": {"command_id": "@a_command", "ok": True},
    "schedule_create": {"name": "viewer-made", "alias": "a-coder", "task": "from a viewer", "cron": "* * * * *"},
    "schedule_pause": {"schedule_id": "@a_schedule"},
    "schedule_resume": {"schedule_id": "@a_schedule_paused"},
    "schedule_run_now": {"schedule_id": "@a_schedule"},
    "schedule_delete": {"schedule_id": "@a_schedule"},
    "cap_set": {"scope": "all", "limit": 1},
    "cap_delete": {"cap_id": "@a_cap"},
    "budget_set": {"period": "day", "limit_usd": 1.0},
    "budget_delete": {"budget_id": "@a_budget"},
}
# case id -> (tool, arguments, expected refusal code; None: answered with A's data). A viewer reads, but
# acts as no agent (hub_agents.identity): naming the alias reading (an inbox's, a channel member's,
# the one whose members-only posts search finds) is refused; an alias that names a target is not.
VIEWER_READS: dict[str, tuple[str, dict[str, Any], str | None]] = {
    "get_all_status": ("get_all_status", {}, None),
    "get_session_status": ("get_session_status", {"alias": "a-coder"}, None),
    "get_inbox-a_coder": ("get_inbox", {"alias": "a-coder"}, "alias_not_yours"),
    "get_completions": ("get_completions", {"alias": "a-coder"}, None),
    "list_tasks": ("list_tasks", {}, None),
    "get_task": ("get_task", {"task_id": "@a_live"}, None),
    "find_agents": ("find_agents", {"skill": "python"}, None),
    "list_open_tasks": ("list_open_tasks", {"alias": "a-coder"}, None),
    "list_questions": ("list_questions", {}, None),
    "list_approvals": ("list_approvals", {}, None),
    "get_thread": ("get_thread", {"task_id": "@a_live"}, None),
    "channel_list": ("channel_list", {}, None),
    "channel_info": ("channel_info", {"channel_id": "@a_channel"}, None),
    "channel_read-a_coder": ("channel_read", {"channel_id": "@a_channel", "alias": "a-coder"}, "alias_not_yours"),
    "channel_read-broadcast": ("channel_read", {"channel_id": "@a_news"}, None),  # without an alias
    "search-a_coder": ("search", {"query": "post", "alias": "a-coder"}, "alias_not_yours"),
    "search": ("search", {"query": "task"}, None),  # without an alias
    "list_nodes": ("list_nodes", {}, None),
    "node_commands": ("node_commands", {}, None),
    "schedule_list": ("schedule_list", {}, None),
    "cap_list": ("cap_list", {}, None),
    "budget_list": ("budget_list", {}, None),
}
# What each refused read would have shown a member: none of it reaches the viewer.
VIEWER_READ_MARKS = {"get_inbox-a_coder": "A live task", "channel_read-a_coder": "A post", "search-a_coder": "A post"}
VIEWER_REFUSED_READS = {case_id: case for case_id, case in VIEWER_READS.items() if case[2] is not None}
VIEWERS = {
    "viewer_token": "a_viewer",  # a network token with the viewer role
    "mixed_user_token": "mixed",  # a user token of a viewer in A who is a member of B, naming A
}


def viewer_arguments(world: World, tool: str, viewer: str) -> dict[str, Any]:
    arguments = world.value(VIEWER_WRITES[tool])
    if viewer == "mixed_user_token" and "network_id" in TOOLS_BY_NAME[tool].params:
        arguments["network_id"] = world.a.pk  # without it a user of two networks is asked to choose
    return arguments


def check_viewer_write(client: Client, world: World, transport: str, tool: str, viewer: str) -> None:
    before = fingerprint()

    outcome = invoke(client, transport, getattr(world, VIEWERS[viewer]), tool, viewer_arguments(world, tool, viewer))

    # a user token may never heartbeat, nor answer for a node
    if viewer == "mixed_user_token" and tool in ("report_status", "report_node", "node_command_ack"):
        assert_tool_refused(outcome, "network_token_required")
    else:
        assert assert_tool_refused(outcome, "permission_denied")["message"] == VIEWER_REFUSAL.format(world.a.pk)
    assert fingerprint() == before


def check_viewer_read(client: Client, world: World, transport: str, case_id: str, *, caller: str = "a_viewer") -> None:
    tool, template, refusal = VIEWER_READS[case_id]
    before = fingerprint()

    outcome = invoke(client, transport, getattr(world, caller), tool, world.value(template))

    if refusal is not None and caller == "a_viewer":
        assert_tool_refused(outcome, refusal)
        assert VIEWER_READ_MARKS[case_id] not in json.dumps(outcome.body)
        assert fingerprint() == before
        return
    body = assert_answered(outcome)
    assert set(network_ids_in(body)) <= {world.a.pk}
    # A's data, for a viewer too
    marks = ("a-coder", world.a_live, world.a_open, world.a_approval, VIEWER_READ_MARKS.get(case_id, "a-coder"))
    assert any(mark in json.dumps(body) for mark in marks), body
    if refusal is not None:  # the control: what the viewer was refused is there for a member
        assert VIEWER_READ_MARKS[case_id] in json.dumps(body), body


# The dashboard's forms: (path, form)
DASHBOARD_WRITES: dict[str, tuple[str, dict[str, str]]] = {
    "retry": ("/tasks/@a_cancelled/retry/", {}),
    "cancel": ("/tasks/@a_live/cancel/", {"reason": "a viewer wants it"}),
    "reassign": ("/tasks/@a_live/reassign/", {"new_alias": "a-helper"}),
    "dispatch": ("/dispatch/", {"alias": "a-coder", "task": "from a viewer", "priority": "high"}),
    "broadcast": ("/broadcast/", {"message": "from a viewer"}),
    "approve": ("/approvals/@a_approval/decide/", {"decision": "approve"}),
    "channel_create": ("/channels/", {"name": "viewer-room", "type": "group"}),
    "channel_post": ("/channels/@a_channel/", {"content": "from a viewer", "join": "1"}),
    "cap_set": ("/limits/caps/", {"scope": "all", "limit": "1"}),
    "cap_delete": ("/limits/caps/@a_cap/delete/", {}),
    "budget_set": ("/limits/budgets/", {"period": "day", "limit_usd": "1", "on_limit": "hold"}),
    "budget_delete": ("/limits/budgets/@a_budget/delete/", {}),
}
# Forms that show the page again with the refusal (and what was typed): 400, not a redirect.
DASHBOARD_FORMS_SHOWN_AGAIN = {"dispatch", "channel_create", "channel_post", "cap_set", "budget_set"}


def dashboard_post(world: World, user: str, action: str) -> Any:
    path, form = DASHBOARD_WRITES[action]
    browser = browser_of(world.users[user])
    assert browser.get(f"/fleet/?network={world.a.pk}").status_code == 200  # acting in A
    return browser.post(world.url(path), form, follow=True)


async def frames_until_quiet(
    socket: WebsocketCommunicator, quiet: float = 0.1, *, first: bool = False
) -> list[dict[str, Any]]:
    """The frames the socket sends until it is quiet; with `first`, at least one is awaited."""
    frames = [await socket.receive_json_from(timeout=10)] if first else []
    while not await socket.receive_nothing(timeout=quiet):
        frames.append(await socket.receive_json_from())
    return frames


def command_frames(world: World, tool: str) -> list[Any]:
    """Frames that look like a command to run `tool`, in the shapes a client might try."""
    arguments = world.value(VIEWER_WRITES[tool])
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
        {"type": tool, **arguments},
        {"action": tool, "network_id": world.a.pk, "arguments": arguments},
        [{"type": tool, **arguments}],
    ]


# --- 3. webhooks (REST only): A's admin aimed at B; A's members and viewers at A's -----------------

# case id -> (operation, arguments, expected refusal; None: answered with A's webhooks only), called
# by A's admin (the control: B's admin, who reaches B's webhooks and secrets).
WEBHOOK_CROSS: dict[str, tuple[str, dict[str, Any], str | None]] = {
    "webhook_list": ("webhook_list", {}, None),
    "webhook_list-network_b": ("webhook_list", {"network_id": "@b"}, "permission_denied"),
    "webhook_create-network_b": (
        "webhook_create",
        {"url": "https://93.184.215.14/intrusion", "network_id": "@b"},
        "permission_denied",
    ),
    "webhook_enable-b_webhook_off": ("webhook_enable", {"webhook_id": "@b_webhook_off"}, "webhook_not_found"),
    "webhook_disable-b_webhook": ("webhook_disable", {"webhook_id": "@b_webhook"}, "webhook_not_found"),
    "webhook_delete-b_webhook": ("webhook_delete", {"webhook_id": "@b_webhook"}, "webhook_not_found"),
    "webhook_deliveries-b_webhook": ("webhook_deliveries", {"webhook_id": "@b_webhook"}, "webhook_not_found"),
}
# operation -> arguments aimed at A's own webhooks, each of which A's admin may send (a write changes
# A's rows): refused to A's members and viewers, who see and change nothing.
WEBHOOK_ADMIN_ONLY: dict[str, dict[str, Any]] = {
    "webhook_list": {},
    "webhook_create": {"url": "https://93.184.215.14/from-a-member"},
    "webhook_enable": {"webhook_id": "@a_webhook_off"},
    "webhook_disable": {"webhook_id": "@a_webhook"},
    "webhook_delete": {"webhook_id": "@a_webhook"},
    "webhook_deliveries": {"webhook_id": "@a_webhook"},
}
NOT_ADMINS = {"member_token": "a_member", **VIEWERS}


def check_webhook_cross(client: Client, world: World, case_id: str) -> None:
    operation, template, refusal = WEBHOOK_CROSS[case_id]
    arguments = world.value(template)
    b_before = fingerprint(world.b.pk)

    outcome = invoke(client, "rest", world.a_admin, operation, arguments)

    if refusal is None:
        listed = {row["webhook_id"] for row in assert_answered(outcome)["webhooks"]}
        assert listed == set(Subscription.objects.filter(network=world.a).values_list("pk", flat=True))
    else:
        assert_tool_refused(outcome, refusal)
    assert (
        leaked(world, outcome.body, arguments) == [] and world.b_webhook_secret not in outcome.response.content.decode()
    )
    assert fingerprint(world.b.pk) == b_before


def check_webhook_cross_control(client: Client, world: World, case_id: str) -> None:
    operation, template, _ = WEBHOOK_CROSS[case_id]
    arguments = world.value(template)
    b_before = fingerprint(world.b.pk)

    body = assert_answered(invoke(client, "rest", world.b_admin, operation, arguments))

    if WEBHOOK_ROUTES[operation][0] == "get":
        assert leaked(world, body, arguments), body
    else:
        assert fingerprint(world.b.pk) != b_before


def webhook_arguments(world: World, operation: str, caller: str) -> dict[str, Any]:
    arguments = world.value(WEBHOOK_ADMIN_ONLY[operation])
    if caller == "mixed_user_token" and operation in ("webhook_list", "webhook_create"):
        arguments["network_id"] = world.a.pk  # without it a user of two networks is asked to choose
    return arguments


def check_webhook_not_admin(client: Client, world: World, operation: str, caller: str) -> None:
    before = fingerprint()
    arguments = webhook_arguments(world, operation, caller)

    outcome = invoke(client, "rest", getattr(world, NOT_ADMINS[caller]), operation, arguments)

    assert_tool_refused(outcome, "permission_denied")
    assert "/a-hook" not in outcome.response.content.decode()  # not even A's own webhooks' URLs
    assert fingerprint() == before


def check_webhook_not_admin_control(client: Client, world: World, operation: str) -> None:
    before = fingerprint(world.a.pk)

    body = assert_answered(invoke(client, "rest", world.a_admin, operation, world.value(WEBHOOK_ADMIN_ONLY[operation])))

    if WEBHOOK_ROUTES[operation][0] == "get":
        assert "/a-hook" in json.dumps(body)
    else:
        assert fingerprint(world.a.pk) != before


# --- the tests over committed data: /mcp, the REST inbox, SSE, the websocket -----------------------


@pytest.fixture(scope="class")
def committed_world(django_db_setup: None, django_db_blocker: Any) -> Iterator[World]:
    with django_db_blocker.unblock(), committed_data(build_world) as world:
        yield world


class TestOverCommittedData:
    @pytest.fixture
    def restored_rows(self, committed_world: World, django_db_blocker: Any) -> Iterator[None]:
        """Database access without pytest-django's `db`: this class's data is committed, so no
        transaction per test (`committed_world` has the test database set up)."""
        with django_db_blocker.unblock(), rows_restored():
            yield

    @pytest.fixture
    def live(self, restored_rows: None, committed_world: World) -> World:
        return committed_world

    @pytest.mark.parametrize(("transport", "case_id"), params(CROSS, ("mcp", "rest"), needs_commit=True))
    def test_a_member_of_a_neither_reads_nor_touches_network_b(
        self, client: Client, live: World, transport: str, case_id: str
    ) -> None:
        check_cross(client, live, transport, case_id)

    @pytest.mark.parametrize(("transport", "case_id"), params(CROSS, ("rest",), needs_commit=True))
    def test_control_a_member_of_b_makes_the_same_call_and_reaches_b(
        self, client: Client, live: World, transport: str, case_id: str
    ) -> None:
        check_cross_control(client, live, transport, case_id)

    @pytest.mark.parametrize("viewer", VIEWERS)
    @pytest.mark.parametrize(("transport", "tool"), params(VIEWER_WRITES, ("mcp",), needs_commit=True))
    def test_a_viewer_is_refused_every_write_and_nothing_is_written(
        self, client: Client, live: World, transport: str, tool: str, viewer: str
    ) -> None:
        check_viewer_write(client, live, transport, tool, viewer)

    @pytest.mark.parametrize(("transport", "case_id"), params(VIEWER_READS, ("mcp", "rest"), needs_commit=True))
    def test_a_viewer_token_still_reads_as_no_agent(
        self, client: Client, live: World, transport: str, case_id: str
    ) -> None:
        check_viewer_read(client, live, transport, case_id)

    @pytest.mark.parametrize(("transport", "case_id"), params(VIEWER_REFUSED_READS, ("mcp", "rest"), needs_commit=True))
    def test_control_a_member_of_a_makes_the_read_refused_to_a_viewer(
        self, client: Client, live: World, transport: str, case_id: str
    ) -> None:
        check_viewer_read(client, live, transport, case_id, caller="a_member")

    @pytest.mark.parametrize("query", ["?network_id=@b", "?network_id=@b&last_event_id=0"])
    def test_an_event_stream_of_network_b_is_refused(self, client: Client, live: World, query: str) -> None:
        url = live.url("/events/b-coder" + query)

        response = client.get(url, headers={"Authorization": f"Bearer {live.a_member}"})

        assert_refused(response, 403, "permission_denied")
        assert leaked(live, response.content.decode(), url) == []

        async def control() -> tuple[int, bytes]:  # B's member opens the same stream: its first frame
            stream = await AsyncClient().get(url, headers={"Authorization": f"Bearer {live.b_member}"})
            first = await anext(aiter(stream.streaming_content))
            await stream.streaming_content.aclose()
            return stream.status_code, first

        assert async_to_sync(control)() == (200, b"retry: 2000\n\n")

    def test_the_websocket_of_a_member_of_a_replays_and_pushes_nothing_of_b(self, live: World) -> None:
        b_agent = token_authenticate(raw=live.b_member)
        everything = f"?after={live.b.pk}:0,{live.a.pk}:0"  # both ask to replay both networks from the start
        a_operator, b_operator = signed_in(live.users["a-operator"]), signed_in(live.users["b-operator"])

        async def scenario() -> tuple[Any, ...]:
            mine, theirs = websocket(a_operator, everything), websocket(b_operator, everything)
            assert (await mine.connect())[0] and (await theirs.connect())[0]
            hello = await mine.receive_json_from()
            replayed = await frames_until_quiet(mine, first=True)
            assert (await theirs.receive_json_from())["type"] == "hello"
            b_replayed = await frames_until_quiet(theirs, first=True)
            await sync_to_async(send_task)(actor=b_agent, alias="b-coder", task=f"{SECRET} pushed live")
            b_pushed = await frames_until_quiet(theirs, first=True)
            pushed = await frames_until_quiet(mine)
            await mine.disconnect()
            await theirs.disconnect()
            return hello, replayed + pushed, b_replayed, b_pushed

        hello, frames, b_replayed, b_pushed = async_to_sync(scenario)()

        assert hello == {"type": "hello", "positions": {live.a.pk: 0}}
        assert frames, "A's own events are replayed"
        assert {frame["network_id"] for frame in frames} == {live.a.pk}
        assert leaked(live, frames) == []
        # The control: the same replay and push reach a member of B, secrets and all.
        assert leaked(live, b_replayed) and leaked(live, b_pushed)

    @pytest.mark.parametrize("tool", VIEWER_WRITES)
    def test_a_viewers_websocket_frames_change_nothing(self, live: World, tool: str) -> None:
        """/ws/dashboard ignores what a client sends: a viewer's command frames write nothing and get
        no answer, while the socket stays open and keeps pushing the network's events."""
        member = token_authenticate(raw=live.a_member)
        watcher = signed_in(live.users["a-watcher"])
        before = fingerprint()

        async def scenario() -> tuple[Any, ...]:
            socket = websocket(watcher)
            assert (await socket.connect())[0]
            assert (await socket.receive_json_from())["type"] == "hello"
            for frame in command_frames(live, tool):
                await socket.send_json_to(frame)
            answered = await frames_until_quiet(socket)
            after_frames = await sync_to_async(fingerprint)()
            # Still open and live: a member's write is pushed to it.
            sent = await sync_to_async(send_task)(actor=member, alias="a-helper", task="pushed to the watcher")
            pushed = await frames_until_quiet(socket, first=True)
            await socket.disconnect()
            return answered, after_frames, sent["task_id"], pushed

        answered, after_frames, pushed_task, pushed = async_to_sync(scenario)()

        assert answered == []
        assert after_frames == before
        assert pushed and all(frame["payload"]["task_id"] == pushed_task for frame in pushed), pushed


# --- the tests in a rolled-back transaction each: REST, the dashboard ------------------------------


@pytest.fixture(scope="class")
def rolled_back_world(django_db_setup: None, django_db_blocker: Any) -> Iterator[World]:
    with django_db_blocker.unblock(), rolled_back_data(build_world) as world:
        yield world


@pytest.mark.django_db
class TestInRolledBackTransactions:
    @pytest.fixture
    def world(self, rolled_back_world: World) -> World:
        return rolled_back_world

    @pytest.mark.parametrize(("transport", "case_id"), params(CROSS, ("rest",), needs_commit=False))
    def test_a_member_of_a_neither_reads_nor_touches_network_b(
        self, client: Client, world: World, transport: str, case_id: str
    ) -> None:
        check_cross(client, world, transport, case_id)

    @pytest.mark.parametrize(("transport", "case_id"), params(CROSS, ("rest",), needs_commit=False))
    def test_control_a_member_of_b_makes_the_same_call_and_reaches_b(
        self, client: Client, world: World, transport: str, case_id: str
    ) -> None:
        check_cross_control(client, world, transport, case_id)

    @pytest.mark.parametrize("case_id", DASHBOARD_CROSS)
    def test_the_dashboard_of_a_member_of_a_shows_and_touches_nothing_of_b(self, world: World, case_id: str) -> None:
        b_before = fingerprint(world.b.pk)

        response, sent = dashboard_request(world, dashboard_user(case_id, "a"), case_id)

        page = response.content.decode()
        assert leaked(world, page, sent) == []
        assert fingerprint(world.b.pk) == b_before
        if case_id in ("task_page", "retry", "cancel", "reassign"):
            assert response.status_code == 404 and "No task" in page
        elif case_id in ("channel_page", "channel_post"):
            assert response.status_code == 404 and "No channel" in page
        else:
            assert response.status_code in (200, 400) and dashboard_user(case_id, "a") in page

    @pytest.mark.parametrize("case_id", DASHBOARD_CROSS)
    def test_control_the_dashboard_of_a_member_of_b_shows_or_changes_b(self, world: World, case_id: str) -> None:
        b_before = fingerprint(world.b.pk)

        response, sent = dashboard_request(world, dashboard_user(case_id, "b"), case_id)

        assert response.status_code == 200
        if DASHBOARD_CROSS[case_id][0] == "get":
            assert leaked(world, response.content.decode(), sent)
        else:
            assert fingerprint(world.b.pk) != b_before

    @pytest.mark.parametrize("viewer", VIEWERS)
    @pytest.mark.parametrize(("transport", "tool"), params(VIEWER_WRITES, ("rest",), needs_commit=False))
    def test_a_viewer_is_refused_every_write_and_nothing_is_written(
        self, client: Client, world: World, transport: str, tool: str, viewer: str
    ) -> None:
        check_viewer_write(client, world, transport, tool, viewer)

    @pytest.mark.parametrize("tool", VIEWER_WRITES)
    def test_control_a_member_of_a_makes_the_same_write_and_it_lands(
        self, client: Client, world: World, tool: str
    ) -> None:
        before = fingerprint(world.a.pk)

        caller = world.a_admin if tool in ADMIN_TOOLS else world.a_member
        assert_answered(invoke(client, "rest", caller, tool, viewer_arguments(world, tool, "viewer_token")))

        assert fingerprint(world.a.pk) != before

    @pytest.mark.parametrize(("transport", "case_id"), params(VIEWER_READS, ("rest",), needs_commit=False))
    def test_a_viewer_token_still_reads_as_no_agent(
        self, client: Client, world: World, transport: str, case_id: str
    ) -> None:
        check_viewer_read(client, world, transport, case_id)

    @pytest.mark.parametrize(("transport", "case_id"), params(VIEWER_REFUSED_READS, ("rest",), needs_commit=False))
    def test_control_a_member_of_a_makes_the_read_refused_to_a_viewer(
        self, client: Client, world: World, transport: str, case_id: str
    ) -> None:
        check_viewer_read(client, world, transport, case_id, caller="a_member")

    @pytest.mark.parametrize("case_id", WEBHOOK_CROSS)
    def test_an_admin_of_a_neither_reads_nor_touches_the_webhooks_of_b(
        self, client: Client, world: World, case_id: str
    ) -> None:
        check_webhook_cross(client, world, case_id)

    @pytest.mark.parametrize("case_id", WEBHOOK_CROSS)
    def test_control_an_admin_of_b_makes_the_same_webhook_call_and_reaches_b(
        self, client: Client, world: World, case_id: str
    ) -> None:
        check_webhook_cross_control(client, world, case_id)

    @pytest.mark.parametrize("caller", NOT_ADMINS)
    @pytest.mark.parametrize("operation", WEBHOOK_ADMIN_ONLY)
    def test_members_and_viewers_may_neither_see_nor_change_webhooks(
        self, client: Client, world: World, operation: str, caller: str
    ) -> None:
        check_webhook_not_admin(client, world, operation, caller)

    @pytest.mark.parametrize("operation", WEBHOOK_ADMIN_ONLY)
    def test_control_an_admin_of_a_makes_the_same_webhook_call_and_it_lands(
        self, client: Client, world: World, operation: str
    ) -> None:
        check_webhook_not_admin_control(client, world, operation)

    @pytest.mark.parametrize("user", ["a-watcher", "mixed"])
    @pytest.mark.parametrize("action", DASHBOARD_WRITES)
    def test_a_viewer_is_refused_every_dashboard_form(self, world: World, action: str, user: str) -> None:
        before = fingerprint()

        response = dashboard_post(world, user, action)

        page = response.content.decode()
        assert response.status_code == (400 if action in DASHBOARD_FORMS_SHOWN_AGAIN else 200)
        assert VIEWER_REFUSAL.format(world.a.pk) in page
        assert not re.search(r"Task \w+ done\.|Broadcast to \d+ agents|Task sent to", page)
        assert fingerprint() == before

    @pytest.mark.parametrize("action", DASHBOARD_WRITES)
    def test_control_a_member_of_a_sends_the_same_dashboard_form(self, world: World, action: str) -> None:
        before = fingerprint(world.a.pk)

        response = dashboard_post(world, dashboard_user(action, "a"), action)

        assert response.status_code == 200
        assert "may read but not write" not in response.content.decode()
        assert fingerprint(world.a.pk) != before


# --- the matrix covers everything ------------------------------------------------------------------


def covered_endpoints(calls: list[tuple[str, dict[str, Any]]]) -> set[tuple[str, str]]:
    covered = set()
    for tool, arguments in calls:
        method, path, _ = rest_request(tool, arguments)
        match = resolve(API + path)
        covered.add((method, match.route.removeprefix(API.lstrip("/"))))
    return covered


def all_endpoints() -> set[tuple[str, str]]:
    return {
        (method, str(pattern.pattern))
        for pattern in [
            *agent_urlpatterns,
            *task_urlpatterns,
            *channel_urlpatterns,
            *search_urlpatterns,
            *webhook_urlpatterns,
            *schedule_urlpatterns,
            *cap_urlpatterns,
            *budget_urlpatterns,
        ]
        for method in ("get", "post")
        if hasattr(pattern.callback.cls, method)
    }


def test_the_matrix_covers_every_tool_and_every_endpoint() -> None:
    assert_contract_first([tool.name for tool in TOOLS])
    assert set(EXTENSION_TOOLS) <= set(TOOLS_BY_NAME)
    assert set(ROUTES) == set(TOOLS_BY_NAME)
    assert {tool for tool, _, _ in CROSS.values()} == set(TOOLS_BY_NAME)
    assert (
        READ_TOOLS == {tool.name for tool in TOOLS if tool.read_only} == {tool for tool, _, _ in VIEWER_READS.values()}
    )
    assert set(VIEWER_READ_MARKS) == set(VIEWER_REFUSED_READS)
    assert set(VIEWER_WRITES) == WRITE_TOOLS
    assert len(WRITE_TOOLS & set(CONTRACT_TOOLS)) == 11
    webhook_calls = [(operation, arguments) for operation, arguments, _ in WEBHOOK_CROSS.values()]
    assert set(WEBHOOK_ADMIN_ONLY) == {operation for operation, _ in webhook_calls} == set(WEBHOOK_ROUTES)
    cross_calls = [(tool, arguments) for tool, arguments, _ in CROSS.values()]
    assert covered_endpoints(cross_calls + webhook_calls) == all_endpoints()
    posts = {(method, route) for method, route in all_endpoints() if method == "post"}
    posted = {name for name, (method, _) in WEBHOOK_ROUTES.items() if method == "post"}
    webhook_writes = [(name, arguments) for name, arguments in WEBHOOK_ADMIN_ONLY.items() if name in posted]
    assert covered_endpoints(list(VIEWER_WRITES.items()) + webhook_writes) == posts
