"""/metrics counts runs' tokens and cost by network, agent and model (issue 25), read from the
database at scrape time like the hub's other state: every worker answers the same totals."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.helpers.calls import ack_inbox, get_inbox, report_completion, send_reply, send_task
from tests.helpers.metrics import families, parse, value

pytestmark = pytest.mark.django_db


def test_run_tokens_and_cost_by_network_agent_and_model(agent, network):
    for alias, model, tokens, cost in (("coder", "m1", 100, 0.5), ("coder", "m1", 50, 0.25), ("coder", None, 7, 1.0)):
        task_id = send_task(actor=agent, alias=alias, task=f"t{tokens}", from_session="lead")["task_id"]
        (message,) = [m for m in get_inbox(actor=agent, alias=alias)["messages"] if m["task_id"] == task_id]
        ack_inbox(actor=agent, alias=alias, message_id=message["id"])
        usage = {"tokens_in": tokens, "tokens_out": 1, "cost_usd": cost, **({"model": model} if model else {})}
        send_reply(
            actor=agent, alias="lead", text="x", in_reply_to=task_id, status="failed", from_session=alias, **usage
        )
        report_completion(actor=agent, alias=alias, task=task_id, result="x", **usage)  # the same run: counted once

    text = Client().get("/metrics").content.decode()
    samples = parse(text)

    assert families(text)["commhub_run_tokens"] == "counter"
    labels = {"network": network.pk, "agent": "coder"}
    assert value(samples, "commhub_run_tokens_total", **labels, model="m1", direction="in") == 150
    assert value(samples, "commhub_run_tokens_total", **labels, model="m1", direction="out") == 2
    assert value(samples, "commhub_run_tokens_total", **labels, model="", direction="in") == 7
    assert value(samples, "commhub_run_cost_usd_total", **labels, model="m1") == pytest.approx(0.75)
    assert value(samples, "commhub_run_cost_usd_total", **labels, model="") == pytest.approx(1.0)
