"""The operator dashboard: pages over the same selectors and services as MCP and REST."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from commhub.errors import HubError
from hub_agents.actors import Actor
from hub_agents.models import Network, SessionStatus
from hub_agents.selectors import audit_list, fleet
from hub_agents.services import actor_for_user, network_default_for
from hub_tasks.models import TERMINAL, Move, Priority, Task, TaskStatus
from hub_tasks.selectors import completion_hours, completion_list, task_family, task_page
from hub_tasks.services import broadcast_send, task_cancel, task_reassign, task_retry, task_send

TASKS_PER_PAGE = 50
AUDIT_PER_PAGE = 100
FRAGMENTS = frozenset({"fleet", "tasks", "task", "completions"})  # the pages' live regions


class Desk:
    """Who is looking, at which network, and what they may do there."""

    def __init__(self, request: HttpRequest) -> None:
        network_default_for(user=request.user)
        self.actor: Actor = actor_for_user(request.user)
        networks = dict(Network.objects.filter(pk__in=self.actor.roles).order_by("name").values_list("pk", "name"))
        wanted = request.GET.get("network") or request.session.get("network")
        self.network_id = wanted if wanted in networks else next(iter(networks), None)
        request.session["network"] = self.network_id
        self.networks = networks
        self.can_write = self.network_id is not None and self.actor.can_write(self.network_id)
        self.can_audit = self.network_id is not None and self.actor.can_administer(self.network_id)

    def context(self, **extra: Any) -> dict[str, Any]:
        return {
            "networks": self.networks,
            "network_id": self.network_id,
            "network_name": self.networks.get(self.network_id, ""),
            "can_write": self.can_write,
            "can_audit": self.can_audit,
            **extra,
        }


def _page(request: HttpRequest, template: str, context: dict[str, Any]) -> HttpResponse:
    # ?fragment=<name> renders only that live region, for the page script to swap in.
    fragment = request.GET.get("fragment")
    if fragment in FRAGMENTS:
        return render(request, f"dashboard/_{fragment}.html", context)
    return render(request, template, context)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    return redirect("dashboard:fleet")


@login_required
def fleet_page(request: HttpRequest) -> HttpResponse:
    desk = Desk(request)
    if desk.network_id is None:
        return render(request, "dashboard/no_network.html", desk.context())
    listed = fleet(actor=desk.actor, network_id=desk.network_id)
    for row in listed["sessions"]:
        row["last_seen"] = _moment(row["last_seen_at"])
    counts = {row["status"]: row["count"] for row in listed["summary"]}
    return _page(
        request,
        "dashboard/fleet.html",
        desk.context(
            sessions=listed["sessions"],
            counts=[(status, status.replace("_", " "), counts.get(status, 0)) for status in SessionStatus.values],
            total=sum(counts.values()),
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
    tasks, stats = task_page(actor=desk.actor, network_id=desk.network_id, **{k: v or None for k, v in filters.items()})
    page = Paginator(tasks, TASKS_PER_PAGE).get_page(request.GET.get("page"))
    counts = {row["status"]: row["count"] for row in stats}
    query = urlencode({key: value for key, value in filters.items() if value})
    return _page(
        request,
        "dashboard/tasks.html",
        desk.context(
            page=page,
            filters=filters,
            query=query,
            counts=[(status, counts.get(status, 0)) for status in TaskStatus.values],
            statuses=TaskStatus.values,
            section="tasks",
        ),
    )


@login_required
def task_detail(request: HttpRequest, task_id: str) -> HttpResponse:
    desk = Desk(request)
    try:
        family = task_family(actor=desk.actor, task_id=task_id)
    except HubError as refusal:
        return render(request, "dashboard/not_found.html", desk.context(message=refusal.message), status=404)
    task = Task(status=family["task"]["status"])
    may_write = desk.actor.can_write(family["task"]["network_id"])
    actions = {move: may_write and task.can(move) for move in (Move.RETRY, Move.CANCEL, Move.REASSIGN)}
    return _page(
        request,
        "dashboard/task.html",
        desk.context(
            **family,
            terminal=task.status in TERMINAL,
            can_retry=actions[Move.RETRY],
            can_cancel=actions[Move.CANCEL],
            can_reassign=actions[Move.REASSIGN],
            aliases=_aliases(desk),
            section="tasks",
        ),
    )


@login_required
@require_POST
def task_action(request: HttpRequest, task_id: str, action: str) -> HttpResponse:
    desk = Desk(request)
    sender = f"dashboard:{request.user.get_username()}"
    operations = {
        "retry": lambda: task_retry(actor=desk.actor, task_id=task_id, from_session=sender),
        "cancel": lambda: task_cancel(
            actor=desk.actor, task_id=task_id, reason=request.POST.get("reason") or None, from_session=sender
        ),
        "reassign": lambda: task_reassign(
            actor=desk.actor, task_id=task_id, new_alias=request.POST.get("new_alias"), from_session=sender
        ),
    }
    operation = operations.get(action)
    if operation is None:
        messages.error(request, f"Unknown action {action!r}.")
        return redirect("dashboard:task", task_id=task_id)
    try:
        operation()
        messages.success(request, f"Task {action} done.")
    except HubError as refusal:
        messages.error(request, refusal.message)
    return redirect("dashboard:task", task_id=task_id)


@login_required
def dispatch_page(request: HttpRequest) -> HttpResponse:
    desk = Desk(request)
    form = {"alias": "", "task": "", "priority": "normal", "context": "", "ttl_seconds": "", "parent_task_id": ""}
    error = None
    if request.method == "POST":
        form = {key: request.POST.get(key, "").strip() for key in form}
        try:
            sent = task_send(
                actor=desk.actor,
                network_id=desk.network_id,
                alias=form["alias"],
                task=form["task"],
                priority=form["priority"] or None,
                context=form["context"] or None,
                ttl_seconds=_whole_or_text(form["ttl_seconds"]),
                parent_task_id=form["parent_task_id"] or None,
                from_session=f"dashboard:{request.user.get_username()}",
            )
        except HubError as refusal:
            error = refusal
        else:
            messages.success(request, sent.get("warning") or f"Task sent to {form['alias']}.")
            return redirect("dashboard:task", task_id=sent["task_id"])
    return render(
        request,
        "dashboard/dispatch.html",
        desk.context(form=form, error=error, aliases=_aliases(desk), priorities=Priority.values, section="dispatch"),
        status=400 if error else 200,
    )


@login_required
@require_POST
def broadcast_action(request: HttpRequest) -> HttpResponse:
    desk = Desk(request)
    try:
        sent = broadcast_send(
            actor=desk.actor,
            network_id=desk.network_id,
            message=request.POST.get("message", ""),
            filter_server=request.POST.get("filter_server") or None,
            filter_status=request.POST.get("filter_status") or None,
        )
        messages.success(request, f"Broadcast to {sent['recipients']} agents.")
    except HubError as refusal:
        messages.error(request, refusal.message)
    return redirect(reverse("dashboard:dispatch") + "#broadcast")


@login_required
def completions_page(request: HttpRequest) -> HttpResponse:
    desk = Desk(request)
    if desk.network_id is None:
        return render(request, "dashboard/no_network.html", desk.context())
    rows = completion_list(actor=desk.actor, network_id=desk.network_id, limit=100)["completions"]
    hours = completion_hours(actor=desk.actor, network_id=desk.network_id)
    return _page(
        request,
        "dashboard/completions.html",
        desk.context(completions=rows, chart=_chart(hours), section="completions"),
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


def _whole_or_text(value: str) -> int | str | None:
    """A form field meant as a whole number; anything else goes on, for the service to refuse by name."""
    return int(value) if re.fullmatch(r"[0-9]{1,9}", value) else value or None


def _aliases(desk: Desk) -> list[str]:
    if desk.network_id is None:
        return []
    return sorted({row["alias"] for row in fleet(actor=desk.actor, network_id=desk.network_id)["sessions"]})


def _moment(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def _chart(hours: list[dict[str, Any]]) -> dict[str, Any]:
    """Bar geometry for the 24-hour chart, drawn as inline SVG by the template."""
    peak = max([row["replied"] + row["failed"] for row in hours] + [1])
    width, height, gap = 20, 120, 4
    bars = []
    for index, row in enumerate(hours):
        replied_h = round(height * row["replied"] / peak)
        failed_h = round(height * row["failed"] / peak)
        x = index * (width + gap)
        bars.append(
            {
                "x": x,
                "replied_y": height - replied_h,
                "replied_h": replied_h,
                "failed_y": height - replied_h - failed_h,
                "failed_h": failed_h,
                "label": row["hour"].strftime("%H:00"),
                "replied": row["replied"],
                "failed": row["failed"],
            }
        )
    return {"bars": bars, "width": len(hours) * (width + gap), "height": height, "bar": width, "peak": peak}
