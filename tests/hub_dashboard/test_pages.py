"""The operator dashboard through the browser's eyes (Django's test client): pages, forms, roles."""

from __future__ import annotations

from django.test import Client

from hub_agents.models import Membership, Network
from hub_agents.services import membership_set
from hub_tasks.models import Task
from tests.helpers.calls import report_completion, send_task


def test_pages_need_a_login():
    reply = Client().get("/fleet/")
    assert reply.status_code == 302 and reply["Location"].startswith("/login/")


def test_a_first_superuser_owns_the_default_network(django_user_model, db):
    boss = django_user_model.objects.create_superuser("boss", password="pw")
    browser = Client()
    browser.force_login(boss)

    assert browser.get("/fleet/").status_code == 200
    assert Membership.objects.get(user=boss).network == Network.objects.get(name="default")
    assert Membership.objects.get(user=boss).role == "owner"


def test_fleet_shows_each_agent_with_counts(login, online):
    online("coder", status="working", task="porting the parser", model="model-x", progress=40, hostname="box-1")
    online("reviewer")

    page = login().get("/fleet/").content.decode()

    for expected in ("coder", "porting the parser", "model-x", "box-1", "reviewer", "width: 40%"):
        assert expected in page
    assert "<b>2</b><span>agents</span></a>" in page  # the total tile, a link that clears the status filter


def test_tasks_filter_by_status_alias_sender_and_text(login, agent):
    send_task(actor=agent, alias="coder", task="write the parser", from_session="lead")
    send_task(actor=agent, alias="reviewer", task="review the lexer", from_session="qa")
    browser = login()

    assert "write the parser" in browser.get("/tasks/?alias=coder").content.decode()
    assert "write the parser" not in browser.get("/tasks/?sender=qa").content.decode()
    assert "review the lexer" in browser.get("/tasks/?text=LEXER").content.decode()
    assert "No tasks match" in browser.get("/tasks/?status=replied").content.decode()


def test_tasks_are_paginated(login, agent):
    for n in range(55):
        send_task(actor=agent, alias="coder", task=f"task number {n}")

    first = login().get("/tasks/").content.decode()

    assert "page 1 of 2 · 55 tasks" in first
    assert "task number 54" in first and "task number 0<" not in first


def test_the_task_page_offers_only_the_allowed_actions(login, agent, online):
    online("coder")
    online("helper")
    sent = send_task(actor=agent, alias="coder", task="ship it")
    browser = login()

    live = browser.get(f"/tasks/{sent['task_id']}/").content.decode()
    assert 'name="cancel"' in live and 'name="reassign"' in live and 'name="retry"' not in live
    assert "<option>helper</option>" in live

    browser.post(f"/tasks/{sent['task_id']}/cancel/", {"reason": "not now"})
    done = browser.get(f"/tasks/{sent['task_id']}/").content.decode()
    assert Task.objects.get(pk=sent["task_id"]).status == "cancelled"
    assert 'name="retry"' in done and 'name="cancel"' not in done
    assert "cancelled by dashboard:operator: not now" in done


def test_a_viewer_sees_no_write_controls_and_is_refused_anyway(login, agent):
    sent = send_task(actor=agent, alias="coder", task="ship it")
    viewer = login(role="viewer", username="watcher")

    page = viewer.get(f"/tasks/{sent['task_id']}/").content.decode()
    assert 'name="cancel"' not in page and "Dispatch</a>" not in page

    viewer.post(f"/tasks/{sent['task_id']}/cancel/")
    viewer.post("/dispatch/", {"alias": "coder", "task": "sneaky"})
    assert Task.objects.get(pk=sent["task_id"]).status == "delivered"
    assert not Task.objects.filter(content="sneaky").exists()


def test_dispatch_sends_a_task_and_shows_errors_inline(login, online):
    online("coder")
    browser = login()

    sent = browser.post("/dispatch/", {"alias": "coder", "task": "from the form", "priority": "high"})
    task = Task.objects.get(content="from the form")
    assert sent.status_code == 302 and sent["Location"] == f"/tasks/{task.task_id}/?sent=1"
    assert (task.priority, task.from_name) == ("high", "dashboard:operator")

    refused = browser.post("/dispatch/", {"alias": "coder", "task": "x", "ttl_seconds": "999999"})
    assert refused.status_code == 400
    assert "ttl_seconds" in refused.content.decode() and 'class="invalid"' in refused.content.decode()


def test_broadcast_reaches_online_agents(login, online):
    online("a")
    online("b")

    reply = login().post("/broadcast/", {"message": "deploy at 5"}, follow=True)

    assert "Broadcast to 2 agents." in reply.content.decode()


def test_completions_show_the_feed_and_a_chart(login, agent):
    sent = send_task(actor=agent, alias="coder", task="measure")
    report_completion(actor=agent, alias="coder", task=sent["task_id"], result="all green", score=9, duration_minutes=3)

    page = login().get("/completions/").content.decode()

    assert "all green" in page and "<svg" in page and ": 1 replied, 0 failed</title>" in page


def test_live_regions_render_as_fragments(login, online):
    online("coder")
    fragment = login().get("/fleet/?fragment=fleet").content.decode()

    assert "coder" in fragment and "<html" not in fragment


def test_the_network_switcher_scopes_every_page(login, agent, make_actor, other_network, django_user_model):
    send_task(actor=make_actor(other_network), alias="elsewhere", task="other network task")
    browser = login()
    membership_set(user=django_user_model.objects.get(username="operator"), network=other_network, role="member")

    assert "other network task" not in browser.get("/tasks/").content.decode()
    assert "other network task" in browser.get(f"/tasks/?network={other_network.id}").content.decode()
    assert "other network task" in browser.get("/tasks/").content.decode()  # the choice sticks


def test_odd_input_is_refused_never_a_crash(login, online):
    online("coder")
    browser = login()

    assert browser.get("/fleet/?fragment=../../admin/index").status_code == 200  # the full page, not a template probe
    refused = browser.post("/dispatch/", {"alias": "coder", "task": "x", "ttl_seconds": "²"})
    assert refused.status_code == 400 and "ttl_seconds" in refused.content.decode()
    assert browser.post("/tasks/nope/explode/").status_code == 302
