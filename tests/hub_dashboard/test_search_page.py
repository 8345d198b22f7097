"""The dashboard's search page (Django's test client): the nav's search box leads to ranked results
of the operator's network, their highlights rendered as <mark> and every other character escaped."""

from __future__ import annotations

import pytest

from tests.helpers.calls import channel_create, channel_post, report_completion, send_message, send_task

pytestmark = pytest.mark.django_db


def page(browser, **query) -> str:
    reply = browser.get("/search/", query)
    return reply.status_code, reply.content.decode()


def test_the_nav_has_a_search_box_on_every_page(login):
    html = login("viewer").get("/fleet/").content.decode()
    assert 'action="/search/"' in html and 'name="q"' in html


def test_results_show_their_highlights_and_escape_everything_else(login, agent, outsider):
    task_id = send_task(actor=agent, alias="coder", task="Rotate the <b>deploy</b> keys «now»")["task_id"]
    send_message(actor=agent, alias="coder", message="deploy <script>alert(1)</script> today")
    report_completion(actor=agent, alias="coder", task="the deploy", result="deployed")
    send_task(actor=outsider, alias="coder", task="deploy in another network")

    status, html = page(login("viewer"), q="deploy")

    assert status == 200
    assert f'href="/tasks/{task_id}/"' in html
    assert "&lt;b&gt;<mark>deploy</mark>&lt;/b&gt;" in html  # the text's tags are text; the match is marked
    assert "\u2039now\u203a" in html  # the text's own guillemets are not taken for highlights
    assert "<mark>deploy</mark> &lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(1)" not in html
    assert html.count("<mark>") == 3  # the task, the message, the completion: nothing of the other network
    assert "another network" not in html


def test_a_kind_narrows_and_bad_syntax_is_explained(login, agent):
    send_task(actor=agent, alias="coder", task="deploy the parser")
    send_message(actor=agent, alias="coder", message="deploy the docs")
    browser = login("viewer")

    status, html = page(browser, q="deploy", kind="message")
    assert status == 200 and "deploy the docs" in html and "deploy the parser" not in html

    status, html = page(browser, q='"deploy')
    assert status == 400 and "without its closing" in html

    status, html = page(browser, q="nothing-here")
    assert status == 200 and "Nothing found for" in html


def test_a_post_is_found_and_links_to_its_place_in_its_channel(login, agent):
    channel_id = channel_create(actor=agent, name="ops", alias="lead", members=["coder"])["channel_id"]
    channel_post(actor=agent, channel_id=channel_id, alias="coder", content="warm-up")
    channel_post(actor=agent, channel_id=channel_id, alias="coder", content="the <i>canary</i> is green")
    browser = login("viewer")

    status, html = page(browser, q="canary", kind="post")

    assert status == 200 and html.count("<mark>") == 1
    assert f'href="/channels/{channel_id}/#post-2"' in html and "&lt;i&gt;<mark>canary</mark>&lt;/i&gt;" in html
    assert 'id="post-2"' in browser.get(f"/channels/{channel_id}/").content.decode()
