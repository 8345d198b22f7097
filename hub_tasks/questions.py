"""Questions to a person: an agent holding a task asks (ask_operator), an operator (or a supervising
agent) answers (answer_question), and the answer reaches the agent as a reply in its inbox, pushed
like any reply. The task keeps its status throughout; while a question of it is open the dashboard
shows it waiting for input.

Lock order, as every task write: the task first, then the question's own row. Asking and answering
each write a row of the task's history (TaskEvent, kinds `question` and `answer`) in their
transaction, so get_task's `events` and the task page's timeline tell them with its status changes.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from hub_agents import identity
from hub_agents.actors import Actor
from hub_agents.audit import audit_record
from hub_agents.models import AuditEntry
from hub_core.errors import HubError
from hub_core.events import EventType, HubEvent, publish, sealed_atomic
from hub_tasks.errors import task_not_found, task_terminal
from hub_tasks.lifecycle import HUB, inbox_deliver, leases_renew, task_settle
from hub_tasks.models import TERMINAL, InboxMessage, Question, Task, TaskEvent, TaskStatus
from hub_tasks.results import QuestionAnswered, QuestionAsked


@sealed_atomic
def question_ask(*, actor: Actor, task_id: str, question: str, options: list[str] | None = None) -> QuestionAsked:
    """ask_operator: the agent holding the task asks a person; it renews that agent's leases (it
    is alive, waiting for an answer, not silent)."""
    now = timezone.now()
    task = Task.objects.select_for_update().filter(network_id__in=actor.readable_networks(), pk=task_id).first()
    if task is None:
        raise task_not_found(task_id)
    actor.check_write(task.network_id)
    identity.speak_as(actor, task.network_id, task.to_name)  # only the agent holding the task asks
    task_settle(task, now=now)
    if task.status in TERMINAL:
        raise task_terminal(task.status, task_id=task.task_id)
    if task.status == TaskStatus.CREATED:
        raise HubError(
            "task_not_delivered",
            f"Task {task.task_id} has reached no agent yet (it is created): only the agent working on it asks.",
            status=409,
            task_id=task.task_id,
        )
    asked = Question.objects.create(
        network_id=task.network_id, task=task, asked_by=task.to_name, text=question, options=options, asked_at=now
    )
    offered = f" (options: {' · '.join(options)})" if options else ""
    _history(task, asked, TaskEvent.Kind.QUESTION, actor=asked.asked_by, detail=question + offered, now=now)
    publish(
        HubEvent(
            type=EventType.QUESTION_ASKED,
            network_id=task.network_id,
            audience=(task.from_name,),
            payload={
                "question_id": asked.id,
                "task_id": task.task_id,
                "asked_by": asked.asked_by,
                "question": question,
                "options": options,
            },
        )
    )
    leases_renew(network_ids=[task.network_id], alias=task.to_name, now=now)
    return QuestionAsked(asked.id, task.task_id)


@sealed_atomic
def question_answer(*, actor: Actor, question_id: str, answer: str) -> QuestionAnswered:
    """answer_question: answer an open question once, while its task runs; the agent working on the
    task (the one that asked, or the one it was reassigned to since) finds the answer in its inbox
    (a reply about the task, its context the question)."""
    now = timezone.now()
    found = Question.objects.filter(network_id__in=actor.readable_networks(), pk=question_id).first()
    if found is None:
        raise HubError(
            "question_not_found",
            f"No question {question_id!r} in your networks; the task page and list_questions show them.",
            status=404,
        )
    actor.check_write(found.network_id)
    task = Task.objects.select_for_update().get(pk=found.task_id)  # the task first: the hub's lock order
    task_settle(task, now=now)
    asked = Question.objects.select_for_update().get(pk=question_id)
    if asked.answered_at is not None:
        raise HubError(
            "question_answered",
            f"Question {asked.id} was answered by {asked.answered_by} at {asked.answered_at.isoformat()}.",
            status=409,
            answered_by=asked.answered_by,
        )
    if task.status in TERMINAL:
        raise task_terminal(task.status, task_id=task.task_id)  # nobody works on it to read the answer
    message = inbox_deliver(
        network_id=asked.network_id,
        # Whoever works on the task now: reassigned since, its new agent inherits the question.
        to_alias=task.to_name,
        type=InboxMessage.Type.REPLY,
        content=answer,
        context=f"The answer to your question {asked.id}: {asked.text}",
        from_session=HUB,
        now=now,
        task=task,
    )
    asked.answer, asked.answered_by, asked.answered_at, asked.answer_message = answer, actor.label, now, message
    asked.save(update_fields=["answer", "answered_by", "answered_at", "answer_message"])
    _history(task, asked, TaskEvent.Kind.ANSWER, actor=actor.label, detail=answer, now=now)
    publish(
        HubEvent(
            type=EventType.QUESTION_ANSWERED,
            network_id=asked.network_id,
            audience=(task.from_name,),
            payload={
                "question_id": asked.id,
                "task_id": asked.task_id,
                "asked_by": asked.asked_by,
                "answered_by": actor.label,
            },
        )
    )
    audit_record(
        network_id=asked.network_id,
        action=AuditEntry.Action.QUESTION_ANSWERED,
        actor=actor.label,
        target=f"task {asked.task_id}",
        question=asked.text[:200],
        answer=answer[:200],
    )
    return QuestionAnswered(asked.id, asked.task_id, message.id)


def _history(task: Task, question: Question, kind: str, *, actor: str, detail: str, now: datetime) -> None:
    """The task's history row for a question asked or answered: its status unchanged, both ways."""
    TaskEvent.objects.create(
        task=task,
        kind=kind,
        question=question,
        from_status=task.status,
        to_status=task.status,
        actor=actor,
        detail=detail,
        created_at=now,
    )
