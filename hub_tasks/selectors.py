"""Reads about tasks, inboxes and completions, already scoped to what the actor may see.

Reads only: a task past its deadline still reads as it was stored. The tools that show tasks
(get_inbox, get_task, list_tasks: hub_tools) and the dashboard settle the deadlines first with
`tasks_expire_due`, a write, and then call these. Arguments arrive parsed (hub_tools' specs).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, F, Min, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce, TruncHour
from django.utils import timezone

from hub_agents.actors import Actor
from hub_core.doorbell import feed_group
from hub_core.formats import timestamp
from hub_core.waiting import nothing_yet
from hub_tasks import limits
from hub_tasks.budgets import period_start
from hub_tasks.errors import task_not_found
from hub_tasks.models import (
    ACTIVE,
    BLOCKED,
    AgentUsage,
    Budget,
    Completion,
    InboxMessage,
    Question,
    Task,
    TaskCount,
    TaskEvent,
    TaskStatus,
)
from hub_tasks.reads import CursorDriver, inbox_read, run_now, task_read
from hub_tasks.results import Row, TaskHistory, TaskListing

# list_tasks rows carry exactly these columns; get_task has the whole row.
TASK_LIST_COLUMNS = (
    "task_id", "from_name", "to_name", "priority", "status", "content", "result", "created_at", "completed_at",
)  # fmt: skip


def inbox_pending(
    *,
    actor: Actor,
    alias: str,
    limit: int = limits.INBOX_LIMIT_DEFAULT,
    network_id: str | None = None,
    wait_seconds: float | None = None,
    renew: Sequence[str] = (),
) -> list[Row]:
    """get_inbox's read: the alias's unacknowledged messages, high priority first, then oldest first
    (hub_tasks.reads.inbox_read, the statement the fast lane runs too; on PostgreSQL it renews the
    alias's leases in `renew` as well).

    An empty inbox with wait_seconds answers empty and says on which feeds a message would show
    (`nothing_yet`); a transport that long-polls waits there and reads again.
    """
    networks = actor.readable_networks(network_id)
    read = inbox_read(CursorDriver(), networks=networks, alias=alias, limit=limit, renew=renew, now=timezone.now())
    rows = run_now(read)
    if not rows:
        nothing_yet(groups=[feed_group(network, alias) for network in networks], seconds=wait_seconds or 0)
    return rows


def task_with_history(*, actor: Actor, task_id: str) -> TaskHistory:
    """get_task's read: the whole task row, its status changes and its attempts (beyond the contract):
    one statement (hub_tasks.reads.task_read, the one the fast lane runs too)."""
    found = run_now(task_read(CursorDriver(), networks=actor.readable_networks(), task_id=task_id))
    if found is None:
        raise task_not_found(task_id)
    return TaskHistory(**found)


def task_rows(
    *,
    actor: Actor,
    alias: str | None = None,
    status: str | None = None,
    from_name: str | None = None,
    dead_letter: bool = False,
    blocked: bool = False,
    network_id: str | None = None,
    limit: int = limits.TASK_LIST_LIMIT_DEFAULT,
) -> TaskListing:
    """list_tasks's read: newest tasks matching the filters; `stats` counts the whole scope by status.
    `dead_letter`: only tasks that failed their last automatic retry; `blocked`: only tasks held
    created for their dependencies, their not_before or a slot of a concurrency cap."""
    networks = actor.readable_networks(network_id)
    tasks = Task.objects.filter(network_id__in=networks)
    if alias is not None:
        tasks = tasks.filter(to_name=alias)
    if status is not None:
        tasks = tasks.filter(status=status)
    if from_name is not None:
        tasks = tasks.filter(from_name=from_name)
    if dead_letter:
        tasks = tasks.filter(dead_lettered_at__isnull=False)
    if blocked:
        tasks = tasks.filter(BLOCKED)
    rows = [task.as_row(TASK_LIST_COLUMNS) for task in tasks.order_by("-created_at", "-pk")[:limit]]
    return TaskListing(tasks=rows, stats=_status_counts(networks, "-count", "status"))


def _status_counts(networks: Iterable[str], *order: str) -> list[dict[str, Any]]:
    """Tasks by status in the networks (`{"status", "count"}`, statuses with none left out), summed
    from the rows the database keeps in step with every task (hub_tasks.counts), not counted."""
    counts = TaskCount.objects.filter(network_id__in=networks).values("status").annotate(count=Sum("n"))
    return list(counts.filter(count__gt=0).order_by(*order))


def completion_list(
    *,
    actor: Actor,
    alias: str | None = None,
    since: datetime | None = None,
    network_id: str | None = None,
    limit: int = limits.COMPLETIONS_LIMIT_DEFAULT,
) -> list[Row]:
    """get_completions: completion records since `since` (default: the last 24 hours), newest first."""
    cutoff = since or timezone.now() - timedelta(hours=24)
    networks = actor.readable_networks(network_id)
    completions = Completion.objects.filter(network_id__in=networks, completed_at__gte=cutoff)
    if alias is not None:
        completions = completions.filter(session_name=alias)
    rows = completions.order_by("-completed_at", "-pk")[:limit]
    return [completion.as_row() for completion in rows]


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
    dead_letter: bool = False,
) -> tuple[QuerySet[Task], list[dict[str, Any]]]:
    """The dashboard's task list: filtered rows to paginate, and counts by status.

    Each row carries `status_since` (its newest status change); `order` "status_since" lists the
    longest in their status first, "-status_since" the freshest; anything else, newest created first.
    """
    (network,) = actor.readable_networks(network_id)
    tasks = Task.objects.filter(network_id=network)
    if status:
        tasks = tasks.filter(status=status)
    if alias:
        tasks = tasks.filter(to_name=alias)
    if sender:
        tasks = tasks.filter(from_name=sender)
    if text:
        tasks = tasks.filter(content__icontains=text)
    if dead_letter:
        tasks = tasks.filter(dead_lettered_at__isnull=False)
    stats = _status_counts([network], "status")
    # A question asked or answered is history too, but no change of status.
    changes = TaskEvent.objects.filter(task=OuterRef("pk"), kind=TaskEvent.Kind.STATUS)
    newest_change = changes.order_by("-id").values("created_at")[:1]
    tasks = tasks.annotate(status_since=Coalesce(Subquery(newest_change), F("created_at")))
    if order in ("status_since", "-status_since"):
        return tasks.order_by(order, "-pk"), stats
    return tasks.order_by("-created_at", "-pk"), stats


def task_family(*, actor: Actor, task_id: str) -> dict[str, Any]:
    """get_task plus what the task page shows around it: parent, children, dependencies, completion."""
    found = task_with_history(actor=actor, task_id=task_id)
    task = Task.objects.get(pk=found.task["task_id"])
    completion = task.completions.order_by("-completed_at").first()
    return {
        "task": found.task,
        "events": found.events,
        "attempts": found.attempts,
        "questions": found.questions,
        "parent": task.parent_task.as_row(TASK_LIST_COLUMNS) if task.parent_task else None,
        "children": [child.as_row(TASK_LIST_COLUMNS) for child in task.children.order_by("created_at")],
        # What it waits for (depends_on) and what waits for it (dependents), as list rows.
        "waits_for": [
            row.depends_on.as_row(TASK_LIST_COLUMNS)
            for row in task.dependencies.select_related("depends_on").order_by("pk")
        ],
        "waited_by": [
            row.task.as_row(TASK_LIST_COLUMNS) for row in task.dependents.select_related("task").order_by("pk")
        ],
        "completion": completion.as_row() if completion else None,
    }


def completion_hours(*, actor: Actor, network_id: str, hours: int = 24) -> list[dict[str, Any]]:
    """Tasks replied and failed per hour over the last `hours`, oldest hour first, gaps as zeros."""
    (network,) = actor.readable_networks(network_id)
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    start = now - timedelta(hours=hours - 1)
    ended = (
        TaskEvent.objects.filter(
            task__network_id=network,
            kind=TaskEvent.Kind.STATUS,
            created_at__gte=start,
            to_status__in=["replied", "failed"],
        )
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


def question_rows(
    *,
    actor: Actor,
    task_id: str | None = None,
    unanswered: bool = False,
    network_id: str | None = None,
    limit: int = limits.QUESTIONS_LIMIT_DEFAULT,
) -> list[dict[str, Any]]:
    """list_questions: questions asked of a person, the oldest unanswered first, then the newest
    answered; of one task, or only the unanswered ones."""
    questions = Question.objects.filter(network_id__in=actor.readable_networks(network_id))
    if task_id is not None:
        questions = questions.filter(task_id=task_id)
    if unanswered:  # waiting for a person: unanswered, about a task still being worked on
        questions = questions.filter(answered_at__isnull=True, task__status__in=ACTIVE)
    open_first = questions.order_by(F("answered_at").desc(nulls_first=True), "asked_at", "pk")
    return [question.as_row() for question in open_first[:limit]]


def questions_waiting(*, network_id: str) -> int:
    """How many questions of the network wait for a person (the dashboard's count)."""
    return Question.objects.filter(network_id=network_id, answered_at__isnull=True, task__status__in=ACTIVE).count()


def questions_by_asker(*, network_id: str) -> dict[str, dict[str, Any]]:
    """The oldest unanswered question of each agent's tasks, by the alias working on the task now
    (the one that asked, or the one it was reassigned to): the fleet links a card to it."""
    waiting = Question.objects.filter(network_id=network_id, answered_at__isnull=True, task__status__in=ACTIVE)
    waiting = waiting.select_related("task").order_by("-asked_at", "-pk")
    return {question.task.to_name: question.as_row() for question in waiting}  # oldest last: it wins


# The order of a thread's entries written in the same microsecond: what prompts comes before what answers.
_THREAD_ORDER = {"task": 0, "question": 1, "answer": 2, "message": 3, "completion": 4}


def task_thread(*, actor: Actor, task_id: str) -> list[dict[str, Any]]:
    """get_thread: the conversation about a task, oldest first: the task as sent, each question its
    agent asked and its answer, every reply, chained reply (a subtask's result) and notice about it,
    and each completion reported for it. Four reads, whatever the thread's length."""
    task = Task.objects.filter(network_id__in=actor.readable_networks(), pk=task_id).first()
    if task is None:
        raise task_not_found(task_id)
    entries: list[_Placed] = [
        _entry("task", task.task_id, task.created_at, task.from_name, task.to_name, task.content, context=task.context)
    ]
    questions = list(task.questions.order_by("asked_at", "pk"))
    answers = {question.answer_message_id: question for question in questions if question.answer_message_id}
    for question in questions:
        entries.append(
            _entry(
                "question", question.id, question.asked_at, question.asked_by, task.from_name, question.text,
                options=question.options,
            )
        )  # fmt: skip
    # The task's own deliveries repeat its text (one per attempt): the task entry stands for them.
    for message in task.inbox_messages.exclude(type=InboxMessage.Type.TASK).order_by("created_at", "pk"):
        question = answers.get(message.id)
        if question is not None:
            entries.append(
                _entry(
                    "answer", message.id, message.created_at, question.answered_by, message.to_alias,
                    message.content, question_id=question.id,
                )
            )  # fmt: skip
        else:
            entries.append(
                _entry(
                    "message", message.id, message.created_at, message.from_session, message.to_alias,
                    message.content, context=message.context, type=message.type,
                )
            )  # fmt: skip
    for completion in task.completions.order_by("completed_at", "pk"):
        entries.append(
            _entry(
                "completion", completion.id, completion.completed_at, completion.session_name, task.from_name,
                completion.result, artifacts=completion.artifacts,
            )
        )  # fmt: skip
    return [entry for *_, entry in sorted(entries, key=lambda placed: placed[:2])]


_Placed = tuple[datetime, int, dict[str, Any]]


def _entry(kind: str, id: str, at: datetime, sender: str, to: str, content: str, **extra: Any) -> _Placed:
    """One entry of a thread, with its place: the stored time to the microsecond (`at` shows
    milliseconds), then its kind's order."""
    entry = {"kind": kind, "id": id, "at": timestamp(at), "from": sender, "to": to, "content": content, **extra}
    return at, _THREAD_ORDER[kind], entry


def tasks_by_network_status() -> list[tuple[str, str, int]]:
    """(network_id, status, tasks) over every network (/metrics), summed from TaskCount's rows like
    `stats`, never counted; statuses with none left out."""
    counts = TaskCount.objects.values("network_id", "status").annotate(count=Sum("n")).filter(count__gt=0)
    return [(row["network_id"], row["status"], row["count"]) for row in counts.order_by("network_id", "status")]


def inbox_depths() -> list[tuple[str, str, int, datetime]]:
    """(network_id, alias, pending messages, the oldest one's created_at) for every inbox with a
    message not acked yet (/metrics): one aggregate over the pending rows' partial index."""
    pending = (
        InboxMessage.objects.filter(acked_at__isnull=True)
        .values("network_id", "to_alias")
        .annotate(depth=Count("*"), oldest=Min("created_at"))
        .order_by("network_id", "to_alias")
    )
    return [(row["network_id"], row["to_alias"], row["depth"], row["oldest"]) for row in pending]


_USAGE = ("runs", "tokens_in", "tokens_out", "cost_usd")


def usage_totals(*, actor: Actor, network_id: str, now: datetime | None = None) -> dict[str, Any]:
    """A network's run usage (runs, tokens in and out, cost), today and all time, in all and per
    alias: {"today": {...}, "all": {...}, "agents": [{"alias", "today": {...}, "all": {...}}]}, most
    costly first. Two aggregates over its AgentUsage rows (a few per agent and day, summed as runs
    are reported), never over the attempts."""
    (network,) = actor.readable_networks(network_id)
    day = timezone.localdate(now or timezone.now())
    rows = AgentUsage.objects.filter(network_id=network)
    sums = {name: Sum(name) for name in _USAGE}
    empty = dict.fromkeys(_USAGE, 0)
    agents: dict[str, dict[str, dict[str, Any]]] = {}
    for span, chosen in (("all", rows), ("today", rows.filter(day=day))):
        for row in chosen.values("alias").annotate(**sums).order_by("alias"):
            spans = agents.setdefault(row["alias"], {"today": dict(empty), "all": dict(empty)})
            spans[span] = {name: row[name] or 0 for name in _USAGE}
    totals = {span: {name: sum(a[span][name] for a in agents.values()) for name in _USAGE} for span in ("today", "all")}
    ranked = sorted(agents.items(), key=lambda item: (-item[1]["all"]["cost_usd"], item[0]))
    return {**totals, "agents": [{"alias": alias, **spans} for alias, spans in ranked]}


def usage_by_network_agent_model() -> list[tuple[str, str, str, int, int, float]]:
    """(network_id, alias, model, tokens in, tokens out, cost in USD), all time, for /metrics: one
    aggregate over AgentUsage. model "": runs that named none."""
    rows = (
        AgentUsage.objects.values("network_id", "alias", "model")
        .annotate(tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out"), cost_usd=Sum("cost_usd"))
        .order_by("network_id", "alias", "model")
    )
    return [
        (r["network_id"], r["alias"], r["model"], r["tokens_in"] or 0, r["tokens_out"] or 0, r["cost_usd"] or 0.0)
        for r in rows
    ]


BudgetGauge = tuple[str, str, str, float, int, float | None, int | None, int]


def budget_gauges(*, now: datetime | None = None) -> list[BudgetGauge]:
    """(network_id, alias ("" : the network's), period, spent USD, spent tokens, limit USD, limit
    tokens, tasks waiting for it) per budget, for /metrics: four queries however many budgets (the
    budgets, the tasks waiting for one, and each period kind's AgentUsage sums by network and alias)."""
    now = now or timezone.now()
    budgets = list(Budget.objects.order_by("network_id", "alias", "period"))
    if not budgets:
        return []
    waiting = dict(
        Task.objects.filter(waiting_budget__isnull=False, status=TaskStatus.CREATED)
        .values_list("waiting_budget")
        .annotate(n=Count("pk"))
        .order_by()
    )
    spent: dict[tuple[str, str, str], tuple[float, int]] = {}
    for period in {budget.period for budget in budgets}:
        rows = (
            AgentUsage.objects.filter(day__gte=period_start(period, now))
            .values("network_id", "alias")
            .annotate(usd=Sum("cost_usd"), tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out"))
            .order_by()
        )
        for row in rows:
            tokens = (row["tokens_in"] or 0) + (row["tokens_out"] or 0)
            for alias in (row["alias"], ""):  # the agent's, and its share of the network's
                usd, total = spent.get((row["network_id"], alias, period), (0.0, 0))
                spent[(row["network_id"], alias, period)] = (usd + (row["usd"] or 0.0), total + tokens)
    gauges: list[BudgetGauge] = []
    for b in budgets:
        usd, tokens = spent.get((b.network_id, b.alias, b.period), (0.0, 0))
        gauges.append((b.network_id, b.alias, b.period, usd, tokens, b.limit_usd, b.limit_tokens, waiting.get(b.pk, 0)))
    return gauges
