"""The Limits page ("Caps and budgets", issue 28): the network's concurrency caps with their slots
used and the tasks waiting for them; owners and admins set and delete caps with its form and
buttons (cap_set and cap_delete, the same door as MCP and REST), members and viewers see the table
without them and their posts are refused. Bad input is shown on the form's field."""

from __future__ import annotations

import pytest
from django.test import Client

from hub_agents.models import AuditEntry
from hub_tasks.models import Cap, Task, TaskStatus
from tests.helpers.calls import cap_set, report_node, report_status, send_task_id
from tests.helpers.dashboard import text

pytestmark = pytest.mark.django_db


def row(page: str, cap: Cap) -> str:
    start = page.index(f'id="cap-{cap.pk}"')
    return page[start : page.index("</tr>", start)]


def test_an_owner_sets_a_cap_sees_its_slots_and_waiters_and_deletes_it(login, agent):
    browser = login("owner")

    reply = browser.post("/limits/caps/", {"scope": "all", "value": "", "limit": "1"}, follow=True)

    cap = Cap.objects.get()
    assert (cap.scope, cap.value, cap.limit, cap.created_by) == ("all", "", 1, "user:operator")
    assert reply.redirect_chain[-1][0] == "/limits/#caps"
    assert "Cap set: network, at most 1 at once (0 now)." in text(reply)
    first, second = send_task_id(agent, "first job"), send_task_id(agent, "second job")
    assert Task.objects.get(pk=second).waiting_cap == cap.pk
    shown = row(text(browser.get("/limits/")), cap)
    assert "1 of 1" in shown and "full" in shown and "1 task" in shown and "Delete" in shown
    assert f'href="/limits/#cap-{cap.pk}"' in text(browser.get(f"/tasks/{second}/"))
    assert "/limits/#cap-" not in text(browser.get(f"/tasks/{first}/"))

    raised = browser.post("/limits/caps/", {"scope": "all", "limit": "3"}, follow=True)
    assert "at most 3 at once (2 now)" in text(raised)
    assert Cap.objects.get().limit == 3 and Task.objects.get(pk=second).status == TaskStatus.DELIVERED

    deleted = browser.post(f"/limits/caps/{cap.pk}/delete/", follow=True)
    assert "Cap deleted" in text(deleted) and "No caps" in text(deleted)
    assert not Cap.objects.exists()
    changes = AuditEntry.objects.filter(action=AuditEntry.Action.CAP_CHANGED).order_by("pk")
    assert [entry.detail["change"] for entry in changes] == ["created", "changed", "deleted"]


def test_a_runtime_cap_names_its_runtime_and_a_delete_frees_its_waiters(login, agent):
    report_node(actor=agent, node_id="n1", agents=[{"alias": "cx", "runtime": "codex", "concurrency": 2, "running": 0}])
    report_status(actor=agent, resume_id="r-cx", alias="cx", status="idle", node_id="n1")
    browser = login("admin")
    browser.post("/limits/caps/", {"scope": "runtime", "value": "codex", "limit": "1"})
    cap = Cap.objects.get()
    first, second = (send_task_id(agent, f"job {n}", alias="cx") for n in (1, 2))
    assert (Task.objects.get(pk=first).waiting_cap, Task.objects.get(pk=second).waiting_cap) == (None, cap.pk)
    shown = row(text(browser.get("/limits/")), cap)
    assert "<code>codex</code>" in shown and "the runs of one runtime" in shown and "1 task" in shown

    browser.post(f"/limits/caps/{cap.pk}/delete/")

    assert Task.objects.get(pk=second).waiting_cap is None
    assert Task.objects.get(pk=second).status == TaskStatus.DELIVERED


@pytest.mark.parametrize(
    ("form", "field", "shown"),
    [
        ({"scope": "all", "limit": "0"}, "limit", "greater than or equal to 1"),
        ({"scope": "all", "limit": "many"}, "limit", "Enter a whole number"),
        ({"scope": "runtime", "value": "", "limit": "2"}, "value", "Value names the runtime the cap counts: give it."),
        ({"scope": "all", "value": "claude", "limit": "2"}, "value", "leave it out"),
        ({"scope": "everything", "limit": "2"}, "scope", "Select a valid choice"),
    ],
)
def test_bad_input_is_shown_on_its_field_and_sets_nothing(login, network, form, field, shown):
    reply = login("owner").post("/limits/caps/", form)

    page = text(reply)
    assert reply.status_code == 400 and not Cap.objects.exists()
    error = page[page.index(f'id="error-{field}"') :]
    assert shown in error[: error.index("</small>")]
    assert f'name="limit" value="{form["limit"]}"' in page  # what was typed, to correct


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_members_and_viewers_see_the_caps_but_change_none(login, owner, role):
    cap = Cap.objects.get(pk=cap_set(actor=owner, scope="runtime", value="codex", limit=4)["cap"]["cap_id"])
    browser = login(role, username="watcher")

    page = text(browser.get("/limits/"))
    assert "codex" in row(page, cap) and "0 of 4" in row(page, cap)
    assert "Set a cap" not in page and "Delete" not in page and 'action="/limits/caps/' not in page

    refused = browser.post("/limits/caps/", {"scope": "all", "limit": "1"})
    assert refused.status_code == 400
    expected = "may read but not write" if role == "viewer" else "Only the owners and admins"
    assert expected in text(refused)
    deleted = browser.post(f"/limits/caps/{cap.pk}/delete/", follow=True)
    assert expected in text(deleted)
    assert list(Cap.objects.values_list("scope", "value", "limit")) == [("runtime", "codex", 4)]


def test_the_caps_fragment_is_the_table_alone_and_the_page_is_linked_from_nodes(login, owner, agent):
    cap_set(actor=owner, scope="all", limit=2)
    send_task_id(agent, "a job")
    browser = login("owner")

    fragment = text(browser.get("/limits/", {"fragment": "caps"}))

    assert fragment.lstrip().startswith("<table") and "1 of 2" in fragment and "<html" not in fragment
    assert 'data-live="caps"' in text(browser.get("/limits/"))
    assert 'href="/limits/"' in text(browser.get("/nodes/"))


def test_the_page_needs_a_login():
    reply = Client().get("/limits/")
    assert reply.status_code == 302 and reply["Location"].startswith("/login/")
