"""Reads about tasks, inboxes and completions, already scoped to what the actor may see.

Reads only: a task past its deadline still reads as it was stored. The tools that show tasks
(get_inbox, get_task, list_tasks: hub_tasks.services) and the dashboard settle the deadlines
first with `tasks_expire_due`, a write, and then call these.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Count, F, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce, TruncHour
from django.utils import timezone

from hub_agents.actors import Actor
from hub_core import validate
from hub_core.doorbell import feed_group
from hub_core.errors import task_not_found
from hub_core.waiting import nothing_yet
from hub_tasks import limits
from hub_tasks.models import Completion, InboxMessage, Task, TaskEvent, TaskStatus

# list_tasks rows carry exactly these columns; get_task has the whole row.
TASK_LIST_COLUMNS = (
    "task_id", "from_name", "to_name", "priority", "status", "content", "result", "created_at", "completed_at",
)  # fmt: skip


def inbox_pending(
    *, actor: Actor, alias: object, limit: object = None, network_id: object = None, wait_seconds: object = None
) -> dict[str, Any]:
    """get_inbox's read: the alias's unacknowledged messages, high priority first, then oldest first.

    An empty inbox with wait_seconds answers empty and says on which feeds a message would show
    (`nothing_yet`); a transport that long-polls waits there and reads again.
    """
    alias = validate.required_identifier("alias", alias)
    limit = validate.whole_number(
        "limit", limit, low=1, high=limits.INBOX_LIMIT_MAX, default=limits.INBOX_LIMIT_DEFAULT
    )
    wait = validate.number("wait_seconds", wait_seconds, low=0, high=limits.WAIT_SECONDS_MAX) or 0
    networks = actor.readable_networks(validate.identifier("network_id", network_id))
    messages = InboxMessage.objects.pending(network_ids=networks, alias=alias).in_delivery_order()[:limit]
    rows = [message.as_row() for message in messages]
    if not rows:
        nothing_yet(groups=[feed_group(network, alias) for network in networks], seconds=wait)
    return {"ok": True, "messages": rows}


def task_with_history(*, actor: Actor, task_id: object) -> dict[str, Any]:
    """get_task's read: the whole task row, its status changes and its attempts (beyond the contract)."""
    task_id = validate.required_identifier("task_id", task_id)
    networks = actor.readable_networks()
    task = Task.objects.filter(network_id__in=networks, pk=task_id).first()
    if task is None:
        raise task_not_found(task_id)
    return {
        "ok": True,
        "task": task.as_row(),
        "events": [event.as_row() for event in task.events.order_by("id")],
        "attempts": [attempt.as_row() for attempt in task.attempts.order_by("number")],
    }


def task_rows(
    *,
    actor: Actor,
    alias: object = None,
    status: object = None,
    from_name: object = None,
    network_id: object = None,
    limit: object = None,
) -> dict[str, Any]:
    """list_tasks's read: newest tasks matching the filters; `stats` counts the whole scope by status."""
    alias = validate.identifier("alias", alias)
    status = validate.choice("status", status, TaskStatus.values)
    from_name = validate.identifier("from_name", from_name)
    limit = validate.whole_number(
        "limit", limit, low=1, high=limits.TASK_LIST_LIMIT_MAX, default=limits.TASK_LIST_LIMIT_DEFAULT
    )
    networks = actor.readable_networks(validate.identifier("network_id", network_id))
    scope = Task.objects.filter(network_id__in=networks)
    tasks = scope
    if alias is not None:
        tasks = tasks.filter(to_name=alias)
    if status is not None:
        tasks = tasks.filter(status=status)
    if from_name is not None:
        tasks = tasks.filter(from_name=from_name)
    rows = [task.as_row(TASK_LIST_COLUMNS) for task in tasks.order_by("-created_at", "-pk")[:limit]]
    stats = scope.values("status").annotate(count=Count("pk")).order_by("-count", "status")
    return {"ok": True, "tasks": rows, "count": len(rows), "stats": list(stats)}


def completion_list(
    *,
    actor: Actor,
    alias: object = None,
    since: object = None,
    network_id: object = None,
    limit: object = None,
) -> dict[str, Any]:
    """get_completions: completion records since `since` (default: the last 24 hours), newest first."""
    alias = validate.identifier("alias", alias)
    cutoff = validate.moment("since", since) or timezone.now() - timedelta(hours=24)
    limit = validate.whole_number(
        "limit", limit, low=1, high=limits.COMPLETIONS_LIMIT_MAX, default=limits.COMPLETIONS_LIMIT_DEFAULT
    )
    networks = actor.readable_networks(validate.identifier("network_id", network_id))
    completions = Completion.objects.filter(network_id__in=networks, completed_at__gte=cutoff)
    if alias is not None:
        completions = completions.filter(session_name=alias)
    rows = completions.order_by("-completed_at", "-pk")[:limit]
    return {"ok": True, "completions": [completion.as_row() for completion in rows]}


def completion_feed(*, actor: Actor, network_id: str, limit: int = 100) -> list[dict[str, Any]]:
    """The dashboard's completions of the last 24 hours: get_completions rows plus the id and text of
    the task each one closed (joined in the same query), so the page names and links the task."""
    (network,) = actor.readable_networks(network_id)
    cutoff = timezone.now() - timedelta(hours=24)
    rows = (
        Completion.objects.filter(network_id=network, completed_at__gte=cutoff)
        .annotate(task_content=F("task__content"))
        .order_by("-completed_at", "-pk")[:limit]
    )
    return [{**row.as_row(), "task_id": row.task_id, "task_content": row.task_content} for row in rows]


def task_page(
    *,
    actor: Actor,
    network_id: str,
    status: str | None = None,
    alias: str | None = None,
    sender: str | None = None,
    text: str | None = None,
    order: str | None = None,
) -> tuple[QuerySet[Task], list[dict[str, Any]]]:
    """The dashboard's task list: filtered rows to paginate, and counts by status.

    Each row carries `status_since` (its newest status change); `order` "status_since" lists the
    longest in their status first, "-status_since" the freshest; anything else, newest created first.
    """
    (network,) = actor.readable_networks(network_id)
    scope = Task.objects.filter(network_id=network)
    tasks = scope
    if status:
        tasks = tasks.filter(status=status)
    if alias:
        tasks = tasks.filter(to_name=alias)
    if sender:
        tasks = tasks.filter(from_name=sender)
    if text:
        tasks = tasks.filter(content__icontains=text)
    stats = list(scope.values("status").annotate(count=Count("pk")).order_by("status"))
    newest_change = TaskEvent.objects.filter(task=OuterRef("pk")).order_by("-id").values("created_at")[:1]
    tasks = tasks.annotate(status_since=Coalesce(Subquery(newest_change), F("created_at")))
    if order in ("status_since", "-status_since"):
        return tasks.order_by(order, "-pk"), stats
    return tasks.order_by("-created_at", "-pk"), stats


def task_family(*, actor: Actor, task_id: str) -> dict[str, Any]:
    """get_task plus what the task page shows around it: parent, children, completion."""
    found = task_with_history(actor=actor, task_id=task_id)
    task = Task.objects.get(pk=found["task"]["task_id"])
    completion = task.completions.order_by("-completed_at").first()
    return {
        **found,
        "parent": task.parent_task.as_row(TASK_LIST_COLUMNS) if task.parent_task else None,
        "children": [child.as_row(TASK_LIST_COLUMNS) for child in task.children.order_by("created_at")],
        "completion": completion.as_row() if completion else None,
    }


def completion_hours(*, actor: Actor, network_id: str, hours: int = 24) -> list[dict[str, Any]]:
    """Tasks replied and failed per hour over the last `hours`, oldest hour first, gaps as zeros."""
    (network,) = actor.readable_networks(network_id)
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    start = now - timedelta(hours=hours - 1)
    ended = (
        TaskEvent.objects.filter(task__network_id=network, created_at__gte=start, to_status__in=["replied", "failed"])
        .annotate(hour=TruncHour("created_at"))
        .values("hour", "to_status")
        .annotate(count=Count("pk"))
    )
    counts = {(row["hour"], row["to_status"]): row["count"] for row in ended}
    slots = [start + timedelta(hours=n) for n in range(hours)]
    return [
        {"hour": slot, "replied": counts.get((slot, "replied"), 0), "failed": counts.get((slot, "failed"), 0)}
        for slot in slots
    ]
