"""The Limits page ("Caps and budgets", issue 28): the network's concurrency caps with their slots
used and the tasks waiting for them; owners and admins set and delete caps with its form and
buttons (cap_set and cap_delete, the same door as MCP and REST), members and viewers see the table
without them and their posts are refused. Bad input is shown on the form's field.

Its budgets the same way (budget_set, budget_delete): each with its spend of each limit, its state
(warned at 80 %, reached), its waiting tasks and when its period ends; the network's budget in a strip
on the Nodes and fleet pages, linking here, and each agent's own on its row and card."""

from __future__ import annotations

import pytest
from django.test import Client

from hub_agents.models import AuditEntry
from hub_core.validate import ID_MAX
from hub_tasks.models import Budget, Cap, Task, TaskStatus
from tests.helpers.calls import (
    budget_set,
    cap_set,
    report_completion,
    report_node,
    report_status,
    send_task_id,
)
from tests.helpers.dashboard import text
from tests.helpers.tasks import take

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


# --- budgets ---------------------------------------------------------------------------------------


def budget_card(page: str, budget: Budget) -> str:
    start = page.index(f'id="budget-{budget.pk}"')
    return page[start : page.index("</li>", start)]


def run(actor, usd: float = 0.0, tokens: int = 0, alias: str = "coder") -> str:
    """A task sent to `alias`, taken and completed with this usage, as a node reports a run."""
    task_id = send_task_id(actor, f"work {usd} {tokens}", alias=alias)
    take(actor, task_id, alias)
    report_completion(actor=actor, alias=alias, task=task_id, result="done", cost_usd=usd, tokens_in=tokens)
    return task_id


def test_an_owner_sets_a_budget_sees_it_warn_and_hold_raises_it_and_deletes_it(login, agent):
    browser = login("owner")

    reply = browser.post(
        "/limits/budgets/", {"alias": "", "period": "day", "limit_usd": "1", "on_limit": "hold"}, follow=True
    )

    budget = Budget.objects.get()
    assert (budget.alias, budget.period, budget.limit_usd, budget.limit_tokens, budget.on_limit) == (
        "", "day", 1.0, None, "hold"
    )  # fmt: skip
    assert reply.redirect_chain[-1][0] == "/limits/#budgets"
    assert "Budget set: the network, a day: $0.00 of $1.00 spent (ok); at the limit new tasks wait." in text(reply)
    run(agent, usd=0.85)
    shown = budget_card(text(browser.get("/limits/")), budget)
    assert "warned" in shown and "$0.85 of $1.00" in shown and "85.0 %" in shown and 'style="width: 85.0%"' in shown
    run(agent, usd=0.25)
    held = send_task_id(agent, "held job")
    assert Task.objects.get(pk=held).waiting_budget == budget.pk
    shown = budget_card(text(browser.get("/limits/")), budget)
    assert "reached" in shown and "1 task waiting" in shown and 'style="width: 100.0%"' in shown
    assert "Delete" in shown and "Period ends" in shown

    raised = browser.post(
        "/limits/budgets/", {"period": "day", "limit_usd": "5", "limit_tokens": "2000", "on_limit": "hold"}, follow=True
    )
    assert "$1.10 of $5.00 and 0 of 2,000 tokens spent (ok)" in text(raised)
    assert Task.objects.get(pk=held).status == TaskStatus.DELIVERED

    deleted = browser.post(f"/limits/budgets/{budget.pk}/delete/", follow=True)
    assert deleted.redirect_chain[-1][0] == "/limits/#budgets"
    assert "Budget deleted" in text(deleted) and "No budgets" in text(deleted)
    assert not Budget.objects.exists()
    changes = AuditEntry.objects.filter(action=AuditEntry.Action.BUDGET_CHANGED).order_by("pk")
    assert [entry.detail["change"] for entry in changes] == ["created", "changed", "deleted"]


def test_an_agents_token_budget_that_refuses(login, agent):
    browser = login("admin")

    browser.post(
        "/limits/budgets/", {"alias": "coder", "period": "month", "limit_tokens": "1000", "on_limit": "refuse"}
    )

    budget = Budget.objects.get()
    assert (budget.alias, budget.period, budget.limit_usd, budget.limit_tokens, budget.on_limit) == (
        "coder", "month", None, 1000, "refuse"
    )  # fmt: skip
    run(agent, tokens=400)
    shown = budget_card(text(browser.get("/limits/")), budget)
    assert "Agent coder" in shown and "a month" in shown and "400 of 1,000 tokens" in shown
    assert "new tasks are refused" in shown and "ok" in shown and "USD" not in shown


@pytest.mark.parametrize(
    ("form", "field", "shown"),
    [
        ({"period": "day", "on_limit": "hold"}, "limit_usd", "Give a limit in USD, in tokens, or both."),
        ({"period": "day", "limit_usd": "0", "on_limit": "hold"}, "limit_usd", "greater than or equal to"),
        ({"period": "day", "limit_usd": "lots", "on_limit": "hold"}, "limit_usd", "Enter a number"),
        ({"period": "day", "limit_tokens": "1.5", "on_limit": "hold"}, "limit_tokens", "Enter a whole number"),
        ({"period": "week", "limit_usd": "1", "on_limit": "hold"}, "period", "Select a valid choice"),
        ({"period": "day", "limit_usd": "1", "on_limit": "shout"}, "on_limit", "Select a valid choice"),
        ({"alias": "x" * (ID_MAX + 1), "period": "day", "limit_usd": "1", "on_limit": "hold"}, "alias", "at most"),
    ],
)
def test_bad_budget_input_is_shown_on_its_field_and_sets_nothing(login, network, form, field, shown):
    reply = login("owner").post("/limits/budgets/", form)

    page = text(reply)
    assert reply.status_code == 400 and not Budget.objects.exists()
    error = page[page.index(f'id="error-{field}"') :]
    assert shown in error[: error.index("</small>")]
    typed = form.get("limit_usd") or form.get("limit_tokens")
    if typed:  # what was typed, to correct
        assert f'value="{typed}"' in page


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_members_and_viewers_see_the_budgets_but_change_none(login, owner, role):
    budget = Budget.objects.get(pk=budget_set(actor=owner, period="day", limit_usd=2.0)["budget"]["budget_id"])
    browser = login(role, username="watcher")

    page = text(browser.get("/limits/"))
    assert "$0.00 of $2.00" in budget_card(page, budget)
    assert "Set a budget" not in page and "Delete" not in page and 'action="/limits/budgets/' not in page

    refused = browser.post("/limits/budgets/", {"period": "day", "limit_usd": "9", "on_limit": "hold"})
    assert refused.status_code == 400
    expected = "may read but not write" if role == "viewer" else "Only the owners and admins"
    assert expected in text(refused)
    deleted = browser.post(f"/limits/budgets/{budget.pk}/delete/", follow=True)
    assert expected in text(deleted)
    assert list(Budget.objects.values_list("limit_usd", flat=True)) == [2.0]


def test_the_budgets_fragment_is_the_list_alone(login, owner):
    budget_set(actor=owner, period="day", limit_usd=2.0)
    browser = login("owner")

    fragment = text(browser.get("/limits/", {"fragment": "budgets"}))

    assert fragment.lstrip().startswith('<ul class="budgets">') and "$0.00 of $2.00" in fragment
    assert "<html" not in fragment and "Concurrency caps" not in fragment
    assert 'data-live="budgets"' in text(browser.get("/limits/"))


def test_budgets_are_shown_on_the_nodes_and_fleet_pages(login, owner, agent):
    report_node(
        actor=agent, node_id="n1", agents=[{"alias": "coder", "runtime": "claude", "concurrency": 2, "running": 0}]
    )
    report_status(actor=agent, resume_id="r-coder", alias="coder", status="idle", node_id="n1")
    report_status(actor=agent, resume_id="r-other", alias="other", status="idle", node_id="n1")
    budget_set(actor=owner, period="month", limit_usd=10.0)
    mine = budget_set(actor=owner, alias="coder", period="day", limit_tokens=1000)["budget"]["budget_id"]
    run(agent, usd=1.0, tokens=850)
    browser = login("viewer")

    for path in ("/nodes/", "/fleet/", "/fleet/?view=table"):
        page = text(browser.get(path))
        strip = page[page.index('class="budget-strip"') :]
        strip = strip[: strip.index("</a>")]
        assert 'href="/limits/#budgets"' in page[page.index('<a class="budget-strip"') - 60 :][:200]
        assert "$1.00 of $10.00" in strip and "10 %" in strip and "Network budget" in strip, path
        assert page.count(f'data-budget="{mine}"') == 1, path  # on coder's row or card only
        meter = page[page.index(f'data-budget="{mine}"') :]
        assert "85 %" in meter[:600] and "warned" in meter[:600], path
    for path in ("/nodes/", "/fleet/"):
        strip = text(browser.get(path, {"fragment": "budgets"}))
        assert strip.lstrip().startswith('<a class="budget-strip"') and "<html" not in strip
    assert f'data-budget="{mine}"' in text(browser.get("/fleet/", {"fragment": "fleet", "only": "coder"}))
    assert f'data-budget="{mine}"' in text(browser.get("/nodes/", {"fragment": "nodes"}))


def test_without_budgets_the_nodes_and_fleet_pages_show_no_strip(login, agent):
    report_status(actor=agent, resume_id="r-coder", alias="coder", status="idle")
    browser = login("owner")

    for path in ("/nodes/", "/fleet/"):
        page = text(browser.get(path))
        assert 'data-live="budgets"' in page and "budget-strip" not in page and "data-budget=" not in page
