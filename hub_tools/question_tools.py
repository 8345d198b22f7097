"""Questions to a person: ask_operator, answer_question, list_questions.

Each spec names its arguments (hub_tools.params; the shared ones in hub_tools.args), the service it
calls and how its answer renders (hub_tools.results); hub_tools.tools gathers every module's specs in
the contract's order."""

from __future__ import annotations

from hub_tasks import limits
from hub_tasks.questions import question_answer, question_ask
from hub_tasks.selectors import (
    question_rows,
)
from hub_tools import args as A
from hub_tools import params as P
from hub_tools import results as R
from hub_tools.schema import result, rows
from hub_tools.tool import Tool


def specs() -> list[Tool]:
    """These tools' specs, from the limits, tables and settings as they are now."""
    NETWORK_ID, TASK_ID, AT_MOST = A.NETWORK_ID, A.TASK_ID, A.AT_MOST
    return [
        # Beyond the contract: questions to a person (hub_tasks.questions).
        Tool(
            name="ask_operator",
            title="Ask a person",
            description=(
                "Ask a person about the task you work on (a decision you may not take alone), with options or "
                "none. The task keeps its status and shows waiting for input; the answer arrives in your inbox "
                "as a reply about the task. Report status waiting_input while you wait."
            ),
            params={
                "task_id": TASK_ID,
                "question": P.text(
                    "The question, with what the person needs to decide.", limits.QUESTION_MAX, required=True
                ),
                "options": P.text_list(
                    "Answers to choose from (shown as buttons).",
                    max_items=limits.OPTIONS_MAX,
                    max_len=limits.OPTION_MAX,
                    unique=True,
                ),
            },
            service=question_ask,
            render=R.as_fields,
            output=result(question_id={"type": "string"}, task_id={"type": "string"}),
        ),
        Tool(
            name="answer_question",
            title="Answer a question",
            description=(
                "Answer an agent's open question (list_questions), once: it gets the answer in its inbox as a "
                "reply about the task. Any text, an offered option or not."
            ),
            params={
                "question_id": P.identifier("The question's id (question_id).", required=True),
                "answer": P.text("The answer.", limits.ANSWER_MAX, required=True),
            },
            service=question_answer,
            render=R.as_fields,
            output=result(question_id={"type": "string"}, task_id={"type": "string"}, message_id={"type": "string"}),
        ),
        Tool(
            name="list_questions",
            title="List questions",
            description=(
                "Questions agents asked a person: unanswered first (oldest first), then answered (newest first)."
            ),
            params={
                "task_id": P.identifier("Only this task's questions."),
                "unanswered": P.flag("Only questions still waiting for an answer."),
                "network_id": NETWORK_ID,
                "limit": AT_MOST,
            },
            service=question_rows,
            render=R.questions,
            output=result(questions=rows("Unanswered first, oldest first; then answered, newest first.")),
            read_only=True,
        ),
    ]
