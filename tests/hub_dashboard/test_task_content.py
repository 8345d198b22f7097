"""What the dashboard pages say (Django's test client): attempts, names and links instead of ids, one
time format, the chart's scale, operator wording for refusals, and forms that cannot misfire."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from freezegun import freeze_time

from hub_agents.models import AuditEntry
from hub_agents.services import membership_set
from hub_core.errors import HubError
from hub_tasks.models import Task
from tests.helpers.calls import (
    ack_inbox,
    answer_question,
    ask_operator,
    report_completion,
    retry_task,
    send_reply,
    send_task,
)

T0 = datetime(2026, 4, 12, 10, 0, tzinfo=UTC)


@pytest.fixture
def operator(django_user_model, network) -> Client:
    user = django_user_model.objects.create_user("operator", password="pw")
    membership_set(user=user, network=network, role="owner")
    browser = Client()
    browser.force_login(user)
    return browser


def visible_text(html: str) -> str:
    """The page as read on screen: tags and their attributes dropped."""
    return re.sub(r"<[^>]+>", " ", html)


def test_the_task_page_shows_every_attempt_with_its_result_and_who_ended_it(operator, agent):
    task_id = send_task(actor=agent, alias="coder", task="publish the notes", from_session="lead")["task_id"]
    send_reply(actor=agent, alias="lead", text="registry is down (503)", in_reply_to=task_id, status="failed")
    retry_task(actor=agent, task_id=task_id)
    send_reply(actor=agent, alias="lead", text="disk full", in_reply_to=task_id, status="failed")
    retry_task(actor=agent, task_id=task_id)
    send_reply(actor=agent, alias="lead", text="published", in_reply_to=task_id)

    page = operator.get(f"/tasks/{task_id}/").content.decode()

    attempts = re.findall(r'<li class="attempt".*?</li>', page, flags=re.S)
    assert [re.search(r"<b>(Attempt \d)</b>", a).group(1) for a in attempts] == ["Attempt 3", "Attempt 2", "Attempt 1"]
    for attempt, result in zip(attempts, ["published", "disk full", "registry is down (503)"], strict=True):
        assert f'<pre class="text">{result}</pre>' in attempt
        assert "by coder" in visible_text(attempt) and "<time" in attempt
    assert "reply from hub" not in page and visible_text(page).count("reply from coder") == 3


def test_reassign_offers_a_placeholder_and_an_empty_choice_is_refused_plainly(operator, agent, online):
    online("coder")
    online("helper")
    task_id = send_task(actor=agent, alias="coder", task="port the lexer")["task_id"]

    page = operator.get(f"/tasks/{task_id}/").content.decode()
    menu = re.search(r'<select name="new_alias".*?</select>', page, flags=re.S).group(0)
    assert "required" in menu.split(">", 1)[0]
    assert re.findall(r"<option[^>]*>([^<]*)</option>", menu) == ["choose an agent", "helper"]
    assert '<option value="" selected disabled>choose an agent</option>' in menu

    refused = operator.post(f"/tasks/{task_id}/reassign/", {"new_alias": ""}, follow=True).content.decode()

    assert Task.objects.get(pk=task_id).to_name == "coder"
    assert "Choose an agent to hand the task to." in refused and "Fix the argument" not in refused


def test_cancel_asks_for_confirmation_and_records_the_reason_in_timeline_and_audit(operator, agent):
    task_id = send_task(actor=agent, alias="coder", task="port the lexer")["task_id"]

    page = operator.get(f"/tasks/{task_id}/").content.decode()
    confirm = re.search(r'<details class="confirm".*?</details>', page, flags=re.S).group(0)
    assert "Cancel task…</summary>" in confirm
    assert '<input name="reason"' in confirm and ">Confirm cancel</button>" in confirm
    assert "/cancel/" not in page.replace(confirm, "")  # no cancel button outside the confirmation

    done = operator.post(f"/tasks/{task_id}/cancel/", {"reason": "superseded by #12"}, follow=True).content.decode()

    assert "cancelled by dashboard:operator: superseded by #12" in done
    entry = AuditEntry.objects.get(action=AuditEntry.Action.TASK_CANCELLED)
    assert entry.detail["reason"] == "superseded by #12"


def test_completions_name_and_link_their_task_and_agent_in_one_query(operator, agent):
    def finish(n: int) -> str:
        task_id = send_task(actor=agent, alias=f"coder{n}", task=f"measure parser {n}")["task_id"]
        report_completion(actor=agent, alias=f"coder{n}", task=task_id, result="all green")
        return task_id

    first = finish(0)
    operator.get("/completions/")  # a session's first page also picks its network (network_landing)
    with CaptureQueriesContext(connection) as one:
        page = operator.get("/completions/?fragment=completions").content.decode()
    for n in range(1, 6):
        finish(n)
    with CaptureQueriesContext(connection) as six:
        operator.get("/completions/?fragment=completions")

    assert f'<a href="/tasks/{first}/" title="measure parser 0">measure parser 0</a>' in page
    assert first not in visible_text(page)  # the id only in the link, never as the text
    assert '<a href="/tasks/?alias=coder0">coder0</a>' in page
    assert len(six.captured_queries) == len(one.captured_queries)


def test_times_read_relative_with_the_exact_time_on_hover_and_durations(operator, agent, online):
    with freeze_time(T0) as clock:
        online("coder")
        task_id = send_task(actor=agent, alias="coder", task="port the lexer")["task_id"]
        clock.tick(90)
        online("coder", status="working", task=task_id)
        clock.tick(240)
        report_completion(actor=agent, alias="coder", task=task_id, result="ported")
        clock.tick(180)

        task_page = operator.get(f"/tasks/{task_id}/").content.decode()
        completions = operator.get("/completions/").content.decode()

    created = '<time datetime="2026-04-12T10:00:00+00:00" title="2026-04-12 10:00:00 UTC">8 min ago</time>'
    assert f"<dt>Created</dt><dd>{created}</dd>" in task_page
    assert '<dt>Queued for</dt><dd class="span">1 min 30 s</dd>' in task_page
    assert '<dt>Ran for</dt><dd class="span">4 min</dd>' in task_page
    assert '<td class="when"><time datetime="2026-04-12T10:05:30+00:00" title="2026-04-12 10:05:30 UTC">3 min ago' in (
        completions
    )
    for page in (task_page, completions):
        assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", visible_text(page))  # no raw ISO on screen
    assert "hour (UTC)" in completions


def test_the_chart_has_a_y_axis_and_one_task_does_not_fill_its_height(operator, agent):
    task_id = send_task(actor=agent, alias="coder", task="measure")["task_id"]
    report_completion(actor=agent, alias="coder", task=task_id, result="done")

    page = operator.get("/completions/").content.decode()

    assert re.findall(r'<text class="tick"[^>]*>(\d+)</text>', page) == ["0", "1", "2", "3", "4"]
    heights = [int(h) for h in re.findall(r'<rect class="ok"[^>]*height="(\d+)"', page)]
    assert max(heights) == 30  # a quarter of the 120-unit plot, not all of it


def test_dispatch_errors_read_in_operator_language_next_to_the_field(operator, agent, online):
    online("coder")

    page = operator.post("/dispatch/", {"alias": "coder", "task": "x", "ttl_seconds": "999999"}).content.decode()

    assert '<small class="field-error" id="error-ttl_seconds">Enter the time to live as a whole number' in page
    assert 'aria-describedby="error-ttl_seconds"' in page
    assert "Fix the argument" not in page and "call again" not in page
    blank = operator.post("/dispatch/", {"alias": " ", "task": "x"}).content.decode()
    assert '<small class="field-error" id="error-alias">Choose or type the agent' in blank
    # Agents (MCP, REST) keep the wording written for them.
    with pytest.raises(HubError) as refused:
        send_task(actor=agent, alias="coder", task="x", ttl_seconds=999999)
    assert refused.value.message.startswith("Fix the argument `ttl_seconds` and call again")


def test_the_sent_banner_follows_the_task_and_goes_once_it_fails(operator, agent, online):
    online("coder")
    sent = operator.post("/dispatch/", {"alias": "coder", "task": "publish the notes"}, follow=True)
    task_id = Task.objects.get(content="publish the notes").task_id
    assert "Task sent to coder: now delivered" in sent.content.decode()

    send_reply(actor=agent, alias="lead", text="registry is down (503)", in_reply_to=task_id, status="failed")

    for url in (f"/tasks/{task_id}/?sent=1", f"/tasks/{task_id}/?sent=1&fragment=task"):
        page = operator.get(url).content.decode()
        assert "Task sent" not in page and "failed" in page


def test_the_task_page_shows_its_conversation_in_order(operator, agent, clock):
    task_id = send_task(actor=agent, alias="coder", task="port the parser", from_session="lead")["task_id"]
    ack_inbox(actor=agent, alias="coder", message_id=task_id)
    clock.tick(1)
    asked = ask_operator(actor=agent, task_id=task_id, question="Keep the <old> API?", options=["yes", "no"])
    clock.tick(1)
    answer_question(actor=agent, question_id=asked["question_id"], answer="yes, one more release")
    clock.tick(1)
    send_reply(actor=agent, alias="lead", text="halfway there", in_reply_to=task_id, from_session="coder")
    clock.tick(1)
    report_completion(actor=agent, alias="coder", task=task_id, result="parser ported")

    page = operator.get(f"/tasks/{task_id}/").content.decode()

    (conversation,) = re.findall(r'<ol class="thread">.*?</ol>', page, flags=re.S)
    said = [visible_text(item) for item in re.findall(r'<li class="said.*?</li>', conversation, flags=re.S)]
    expected = ["port the parser", "Keep the <old> API?", "yes, one more release", "halfway there", "parser ported"]
    assert len(said) == len(expected)
    for item, text in zip(said, ["port the parser", "Keep the &lt;old&gt; API?", *expected[2:]], strict=True):
        assert text in item
    assert "Keep the <old> API?" not in conversation  # escaped, as everything an agent wrote


def test_the_timeline_tells_a_question_and_its_answer_between_status_changes(operator, agent, clock):
    task_id = send_task(actor=agent, alias="coder", task="port the parser", from_session="lead")["task_id"]
    ack_inbox(actor=agent, alias="coder", message_id=task_id)
    clock.tick(1)
    asked = ask_operator(actor=agent, task_id=task_id, question="Keep the <old> API?", options=["yes", "no"])
    clock.tick(1)
    answer_question(actor=agent, question_id=asked["question_id"], answer="yes, one more release")
    clock.tick(1)
    report_completion(actor=agent, alias="coder", task=task_id, result="parser ported")

    page = operator.get(f"/tasks/{task_id}/").content.decode()

    (timeline,) = re.findall(r'<ol class="timeline">.*?</ol>', page, flags=re.S)
    kinds = re.findall(r'<li data-key="e\d+" class="k-(\w+)">', timeline)
    assert kinds == ["status", "status", "question", "answer", "status"]
    entries = [visible_text(item) for item in re.findall(r"<li .*?</li>", timeline, flags=re.S)]
    assert "Keep the &lt;old&gt; API? (options: yes · no)" in entries[2] and "coder" in entries[2]
    assert "yes, one more release" in entries[3] and agent.label in entries[3]
