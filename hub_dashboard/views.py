"""The operator dashboard: pages over the same selectors and services as MCP and REST."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from hub_agents import limits as agent_limits
from hub_agents.actors import DASHBOARD_SENDER, Actor
from hub_agents.models import Network, SessionStatus
from hub_agents.selectors import audit_list, network_landing, node_list, session_aliases
from hub_agents.services import actor_for_user, network_choose, network_default_for
from hub_approvals.selectors import approvals_waiting
from hub_approvals.services import Held
from hub_core import validate
from hub_core.errors import HubError
from hub_dashboard.budgets import budgets_by_scope
from hub_dashboard.chart import bar_chart
from hub_dashboard.wording import refusal_for_operator
from hub_events.selectors import events_position
from hub_fleet.pool import open_tasks
from hub_fleet.selectors import agent_health, fleet, problem_rank
from hub_tasks import limits
from hub_tasks.models import TERMINAL, Move, Priority, Task, TaskStatus
from hub_tasks.selectors import (
    completion_feed,
    completion_hours,
    question_rows,
    questions_by_asker,
    questions_waiting,
    task_family,
    task_page,
    task_thread,
    usage_totals,
)
from hub_tasks.settled import tasks_settled
from hub_tools.tools import invoke

TASKS_PER_PAGE = 50
POOL_SHOWN = 20  # open tasks in the fleet page's pool column
QUESTIONS_SHOWN = 100  # on the questions page: every unanswered one first
AUDIT_PER_PAGE = 100
FRAGMENTS = frozenset(
    {"fleet", "pool", "tasks", "task", "completions", "questions", "questions_count", "approvals", "approvals_count"}
    | {"channels", "channel_posts", "nodes"}
)  # the pages' live regions
# The fleet table's sorts: `?sort=<key>` (or `-<key>`, reversed). Problems first (the default, cards
# and table), stalest first, longest-running first: the orders that find a stuck agent at the top.
FLEET_SORTS = {
    "status": lambda row: (problem_rank(row), row["alias"]),
    "seen": lambda row: row["last_seen_at"] or "",
    "age": lambda row: row["current_task"]["since"].isoformat() if row["current_task"] else None,
}
TASK_SORTS = frozenset({"status_since", "-status_since"})
FAVICON = Path(__file__).resolve().parent / "static" / "dashboard" / "favicon.ico"


class Desk:
    """Who is looking, at which network, and what they may do there."""

    def __init__(self, request: HttpRequest) -> None:
        network_default_for(user=request.user)
        self.actor: Actor = actor_for_user(request.user)
        networks = dict(Network.objects.filter(pk__in=self.actor.roles).order_by("name").values_list("pk", "name"))
        asked, kept = request.GET.get("network"), request.session.get("network")
        if asked in networks and asked != kept:
            network_choose(user=request.user, network_id=asked)  # found there again at the next login
        # A new session (a login) opens where the user left off, or where their agents are.
        wanted = asked if asked in networks else kept if kept in networks else network_landing(user=request.user)
        self.network_id = wanted if wanted in networks else next(iter(networks), None)
        request.session["network"] = self.network_id
        self.networks = networks
        self.can_write = self.network_id is not None and self.actor.can_write(self.network_id)
        self.can_audit = self.network_id is not None and self.actor.can_administer(self.network_id)
        # Where the network's event log stood before this page read anything: the page's socket
        # replays from here, so an event between this render and the socket's opening still
        # reaches the page, and its first frame need not refresh what was just rendered.
        self.position = (
            events_position(network_id=self.network_id)
            if self.network_id is not None and "fragment" not in request.GET
            else None
        )

    def context(self, **extra: Any) -> dict[str, Any]:
        return {
            "networks": self.networks,
            "network_id": self.network_id,
            "network_name": self.networks.get(self.network_id, ""),
            "can_write": self.can_write,
            "can_audit": self.can_audit,
            "live_after": f"{self.network_id}:{self.position}" if self.position is not None else "",
            # The nav's count of questions agents wait on a person for.
            "questions_waiting": questions_waiting(network_id=self.network_id) if self.network_id else 0,
            # And of calls an approval rule holds for an owner's or admin's yes.
            "approvals_waiting": approvals_waiting(network_id=self.network_id) if self.network_id else 0,
            **extra,
        }


def admins_only(request: HttpRequest, desk: Desk, message: str) -> HttpResponse | None:
    """The page an owners-and-admins page shows anyone else (`message` says why), or None for them."""
    if desk.network_id is None:
        return render(request, "dashboard/no_network.html", desk.context())
    if not desk.can_audit:
        return render(request, "dashboard/not_found.html", desk.context(message=message), status=403)
    return None


def live_page(request: HttpRequest, template: str, context: dict[str, Any]) -> HttpResponse:
    """A page with live regions. ?fragment=<name> renders only that region, for the page script
    to swap in; with &only=<key> just that region's summary and the key's cards or rows."""
    fragment = request.GET.get("fragment")
    if fragment in FRAGMENTS:
        part = "_part" if request.GET.get("only") and fragment in ("fleet", "tasks") else ""
        return render(request, f"dashboard/_{fragment}{part}.html", {**context, "live": True})
    return render(request, template, {**context, "live": True})


@login_required
def home(request: HttpRequest) -> HttpResponse:
    return redirect("dashboard:fleet")


@login_required
def fleet_page(request: HttpRequest) -> HttpResponse:
    desk = Desk(request)
    if desk.network_id is None:
        return render(request, "dashboard/no_network.html", desk.context())
    if request.GET.get("fragment") == "budgets":  # usage reported or a budget moved: the network's strip alone
        network_budgets, _ = budgets_by_scope(desk.actor, desk.network_id)
        return render(request, "dashboard/_budget_strip.html", desk.context(network_budgets=network_budgets))
    nodes = node_list(actor=desk.actor, network_id=desk.network_id)
    if request.GET.get("fragment") == "nodes":  # a node reported: its strip alone, not the whole fleet
        return live_page(request, "dashboard/fleet.html", desk.context(nodes=nodes))
    # ?only=ALIAS: a live update of one alias's cards (and the counts), not the whole fleet.
    listed = fleet(actor=desk.actor, network_id=desk.network_id, alias=request.GET.get("only") or None)
    sessions = listed["sessions"]
    skills = sorted({skill for row in sessions for skill in row["skills"]})
    status = request.GET.get("status", "")
    status = status if status in SessionStatus.values else ""
    if status:
        sessions = [row for row in sessions if row["status"] == status]
    skill = request.GET.get("skill", "")
    skill = skill if re.fullmatch(agent_limits.SKILL_PATTERN, skill) else ""
    if skill:
        sessions = [row for row in sessions if skill in row["skills"]]
    asking = questions_by_asker(network_id=desk.network_id)  # a card links to its agent's open question
    # The network's budgets above the fleet, each agent's own on its card: one budget_list for the page.
    network_budgets, agent_budgets = budgets_by_scope(desk.actor, desk.network_id)
    sessions = [
        {**row, "asks": asking.get(row["alias"]), "budgets": agent_budgets.get(row["alias"], [])} for row in sessions
    ]
    # The open pool beside the fleet: what waits for an agent with the skills, most urgent first.
    tasks_settled(actor=desk.actor, network_id=desk.network_id)  # no open task past its TTL shown
    pool = open_tasks(actor=desk.actor, network_id=desk.network_id, skill=skill or None, limit=POOL_SHOWN)
    view = "table" if request.GET.get("view") == "table" else "cards"
    sort = request.GET.get("sort", "")
    if sort.lstrip("-") in FLEET_SORTS:
        sessions = _sorted(sessions, FLEET_SORTS[sort.lstrip("-")], reverse=sort.startswith("-"))
    else:
        sort = "status"  # fleet() lists problems first
    counts = {row["status"]: row["count"] for row in listed["summary"]}
    return live_page(
        request,
        "dashboard/fleet.html",
        desk.context(
            sessions=sessions,
            counts=[(status, status.replace("_", " "), counts.get(status, 0)) for status in SessionStatus.values],
            total=sum(counts.values()),
            status=status,
            skills=skills,
            skill=skill,
            pool=pool,
            nodes=nodes,
            network_budgets=network_budgets,
            view=view,
            sort=sort,
            section="fleet",
        ),
    )


@login_required
def tasks_page(request: HttpRequest) -> HttpResponse:
    desk = Desk(request)
    if desk.network_id is None:
        return render(request, "dashboard/no_network.html", desk.context())
    # NUL never matches stored text (writes refuse it), and PostgreSQL refuses it in a query.
    filters = {
        key: request.GET.get(key, "").replace("\x00", "").strip() for key in ("status", "alias", "sender", "text")
    }
    if filters["status"] not in TaskStatus.values:
        filters["status"] = ""
    sort = request.GET.get("sort", "")
    sort = sort if sort in TASK_SORTS else ""
    dead_letter = request.GET.get("dead_letter") == "1"
    tasks_settled(actor=desk.actor, network_id=desk.network_id)  # no stale "delivered" shown
    tasks, stats = task_page(
        actor=desk.actor,
        network_id=desk.network_id,
        order=sort or None,
        dead_letter=dead_letter,
        **{k: v or None for k, v in filters.items()},
    )
    if only := request.GET.get("only"):  # a live update of one row: that task, if it is on this list
        tasks = tasks.filter(pk=only)
    page = Paginator(tasks, TASKS_PER_PAGE).get_page(request.GET.get("page"))
    page.object_list = _with_agent_health(list(page.object_list), network_id=desk.network_id)
    counts = {row["status"]: row["count"] for row in stats}
    shown = {**filters, "sort": sort, "dead_letter": "1" if dead_letter else ""}
    query = urlencode({key: value for key, value in shown.items() if value})
    return live_page(
        request,
        "dashboard/tasks.html",
        desk.context(
            page=page,
            filters=filters,
            dead_letter=dead_letter,
            query=query,
            counts=[(status, counts.get(status, 0)) for status in TaskStatus.values],
            statuses=TaskStatus.values,
            sort=sort,
            section="tasks",
        ),
    )


@login_required
def task_detail(request: HttpRequest, task_id: str) -> HttpResponse:
    desk = Desk(request)
    try:
        tasks_settled(actor=desk.actor)  # nor must a task's own page
        family = task_family(actor=desk.actor, task_id=task_id)
        thread = task_thread(actor=desk.actor, task_id=task_id)
    except HubError as refusal:
        return render(
            request, "dashboard/not_found.html", desk.context(message=refusal_for_operator(refusal).text), status=404
        )
    task = Task(status=family["task"]["status"])
    held_by = family["task"]["to_name"]
    health = (
        agent_health(network_id=family["task"]["network_id"], aliases=[held_by]) if task.status not in TERMINAL else {}
    )
    may_write = desk.actor.can_write(family["task"]["network_id"])
    actions = {move: may_write and task.can(move) for move in (Move.RETRY, Move.CANCEL, Move.REASSIGN)}
    return live_page(
        request,
        "dashboard/task.html",
        desk.context(
            **family,
            timeline=_timeline(family["events"]),
            thread=thread,
            # A question of it waits for a person (and the task has not ended meanwhile).
            waiting_input=task.status not in TERMINAL and any(not q["answered_at"] for q in family["questions"]),
            agent_health=health.get(held_by),
            terminal=task.status in TERMINAL,
            can_retry=actions[Move.RETRY],
            can_cancel=actions[Move.CANCEL],
            can_reassign=actions[Move.REASSIGN],
            aliases=_aliases(desk),
            reason_max=limits.REASON_MAX,
            # Just dispatched from the form: a banner inside the live region, so it follows the status.
            sent=request.GET.get("sent") == "1",
            section="tasks",
        ),
    )


@login_required
@require_POST
def task_action(request: HttpRequest, task_id: str, action: str) -> HttpResponse:
    desk = Desk(request)
    sender = DASHBOARD_SENDER + request.user.get_username()
    # Writes go through the tool registry, as MCP's and REST's do: the same checks and write limit.
    operations = {
        "retry": ("retry_task", {}),
        "cancel": ("cancel_task", {"reason": request.POST.get("reason") or None}),
        "reassign": ("reassign_task", {"new_alias": request.POST.get("new_alias")}),
    }
    if action not in operations:
        messages.error(request, f"Unknown action {action!r}.")
        return redirect("dashboard:task", task_id=task_id)
    tool, arguments = operations[action]
    try:
        done = invoke(tool, desk.actor, {"task_id": task_id, "from_session": sender, **arguments})
    except HubError as refusal:
        messages.error(request, refusal_for_operator(refusal).text)
    else:
        if isinstance(done, Held):
            held_notice(request, done)
        else:
            messages.success(request, _done(action, done))
    return redirect("dashboard:task", task_id=task_id)


def held_notice(request: HttpRequest, held: Held) -> None:
    """A write an approval rule held: nothing ran yet; say so, and where it is decided."""
    approvers = "one approver says" if held.approvals_required == 1 else f"{held.approvals_required} approvers say"
    messages.info(
        request,
        format_html(
            'Held for approval ({}): it runs once {} yes. See <a href="{}">Approvals</a>.',
            held.approval_id,
            approvers,
            reverse("dashboard:approvals"),
        ),
    )


def _timeline(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The task page's timeline: its history (get_task's events: status changes, and each question
    asked and answered), by time (a stable sort: what happened in the same millisecond keeps the
    order it was written in)."""
    # Keys the live patcher can match across renders: an entry keeps its key when others come after.
    entries = [{"key": f"e{n}", "at": e["created_at"], **e} for n, e in enumerate(events, 1)]
    return sorted(entries, key=lambda entry: entry["at"])


def _done(action: str, done: Any) -> str:
    """What the operator reads after a task action: `done` is the tool's service result."""
    if action == "retry":
        return f"Task sent again to {done.retried_to}: a new attempt."
    if action == "reassign":
        return f"Task handed from {done.reassigned_from} to {done.reassigned_to}."
    return "Task cancelled."


@login_required
def questions_page(request: HttpRequest) -> HttpResponse:
    desk = Desk(request)
    if desk.network_id is None:
        return render(request, "dashboard/no_network.html", desk.context())
    rows = question_rows(actor=desk.actor, network_id=desk.network_id, limit=QUESTIONS_SHOWN)
    texts = dict(Task.objects.filter(pk__in={row["task_id"] for row in rows}).values_list("pk", "content"))
    for row in rows:
        row["task_content"] = texts.get(row["task_id"], "")
    return live_page(request, "dashboard/questions.html", desk.context(questions=rows, section="questions"))


@login_required
@require_POST
def question_answer_action(request: HttpRequest, question_id: str) -> HttpResponse:
    """An answer from the questions page or a task page: an option's button or the text field."""
    desk = Desk(request)
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        back = reverse("dashboard:questions")
    try:
        done = invoke("answer_question", desk.actor, {"question_id": question_id, "answer": request.POST.get("answer")})
    except HubError as refusal:
        messages.error(request, refusal_for_operator(refusal).text)
    else:
        messages.success(request, f"Answer sent to the agent's inbox (message {done.message_id}).")
    return redirect(back)


@login_required
def dispatch_page(request: HttpRequest) -> HttpResponse:
    desk = Desk(request)
    form = {"alias": "", "task": "", "priority": "normal", "context": "", "ttl_seconds": "", "parent_task_id": ""}
    error = None
    if request.method == "POST":
        form = {key: request.POST.get(key, "").strip() for key in form}
        try:
            sent = invoke(
                "send_task",
                desk.actor,
                {
                    "network_id": desk.network_id,
                    "alias": form["alias"],
                    "task": form["task"],
                    "priority": form["priority"] or None,
                    "context": form["context"] or None,
                    "ttl_seconds": _whole_or_text(form["ttl_seconds"]),
                    "parent_task_id": form["parent_task_id"] or None,
                    "from_session": DASHBOARD_SENDER + request.user.get_username(),
                },
            )
        except HubError as refusal:
            error = refusal_for_operator(refusal)
        else:
            if isinstance(sent, Held):
                held_notice(request, sent)
                return redirect("dashboard:approvals")
            if sent.delivery.warning:
                messages.warning(request, sent.delivery.warning)
            return redirect(reverse("dashboard:task", kwargs={"task_id": sent.task_id}) + "?sent=1")
    return render(
        request,
        # A viewer gets a plain note, not forms the server would refuse (and a POST's refusal).
        "dashboard/dispatch.html" if desk.can_write else "dashboard/dispatch_closed.html",
        desk.context(
            form=form,
            error=error,
            aliases=_aliases(desk),
            priorities=Priority.values,
            text_max=validate.TEXT_MAX,
            section="dispatch",
        ),
        status=400 if error else 200,
    )


@login_required
@require_POST
def broadcast_action(request: HttpRequest) -> HttpResponse:
    desk = Desk(request)
    try:
        sent = invoke(
            "broadcast",
            desk.actor,
            {
                "network_id": desk.network_id,
                "message": request.POST.get("message", ""),
                "filter_server": request.POST.get("filter_server") or None,
                "filter_status": request.POST.get("filter_status") or None,
            },
        )
    except HubError as refusal:
        messages.error(request, refusal_for_operator(refusal).text)
    else:
        if isinstance(sent, Held):
            held_notice(request, sent)
        else:
            messages.success(request, f"Broadcast to {len(sent)} agents.")
    return redirect(reverse("dashboard:dispatch") + "#broadcast")


@login_required
def completions_page(request: HttpRequest) -> HttpResponse:
    desk = Desk(request)
    if desk.network_id is None:
        return render(request, "dashboard/no_network.html", desk.context())
    rows = completion_feed(actor=desk.actor, network_id=desk.network_id, limit=100)
    hours = completion_hours(actor=desk.actor, network_id=desk.network_id)
    usage = usage_totals(actor=desk.actor, network_id=desk.network_id)  # runs' tokens and cost, per agent
    return live_page(
        request,
        "dashboard/completions.html",
        desk.context(completions=rows, chart=bar_chart(hours), usage=usage, section="completions"),
    )


@login_required
def audit_page(request: HttpRequest) -> HttpResponse:
    desk = Desk(request)
    if desk.network_id is None:
        return render(request, "dashboard/no_network.html", desk.context())
    try:
        entries = audit_list(actor=desk.actor, network_id=desk.network_id)
    except HubError as refusal:
        return render(request, "dashboard/not_found.html", desk.context(message=refusal.message), status=403)
    page = Paginator(entries, AUDIT_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "dashboard/audit.html", desk.context(page=page, section="audit"))


def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers ask for on pages without an icon link (the admin, the API docs)."""
    return HttpResponse(_favicon_bytes(), content_type="image/x-icon", headers={"Cache-Control": "max-age=86400"})


@cache
def _favicon_bytes() -> bytes:
    return FAVICON.read_bytes()


def _sorted(rows: list[dict[str, Any]], key: Any, *, reverse: bool) -> list[dict[str, Any]]:
    """Rows by key, either way round; rows without a value (no current task) last both ways."""
    known = [row for row in rows if key(row) is not None]
    return sorted(known, key=key, reverse=reverse) + [row for row in rows if key(row) is None]


def _with_agent_health(tasks: list[Task], *, network_id: str) -> list[Task]:
    """Open tasks whose agent cannot be counted on (in error, offline, silent, unknown) carry what
    hub_fleet's agent_health says about it as `agent_health`; the others None."""
    waiting = [task for task in tasks if task.status not in TERMINAL]
    health = agent_health(network_id=network_id, aliases={task.to_name for task in waiting})
    for task in tasks:
        task.agent_health = health.get(task.to_name) if task.status not in TERMINAL else None
    return tasks


def _whole_or_text(value: str) -> int | str | None:
    """A form field meant as a whole number; anything else goes on, for the service to refuse by name."""
    return int(value) if re.fullmatch(r"[0-9]{1,9}", value) else value or None


def _aliases(desk: Desk) -> list[str]:
    if desk.network_id is None:
        return []
    return session_aliases(actor=desk.actor, network_id=desk.network_id)
