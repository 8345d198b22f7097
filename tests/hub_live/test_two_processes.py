"""Many processes: a task sent through one hub process reaches clients connected to another."""

from __future__ import annotations

import uuid

import httpx
import pytest
from django.conf import settings
from django.db import connection

from tests.helpers.live import Agent, Hub, sent_reaches_socket_and_sse

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def shared_services():
    if connection.vendor != "postgresql" or not settings.REDIS_URL:
        pytest.skip("needs PostgreSQL and Redis shared by the processes (CI's second run)")


def test_a_task_sent_through_one_process_reaches_clients_of_another(hub_server, agent_http, network, django_user_model):
    hub_a, hub_b = hub_server(), hub_server()
    sent, socket_frame, sse_frames = sent_reaches_socket_and_sse(
        hub_a, hub_b, agent_http, network, django_user_model, "crosses processes"
    )
    task_id = sent["task_id"]
    assert (socket_frame["type"], socket_frame["payload"]["task_id"]) == ("new_task", task_id)
    assert [(frame["type"], frame["payload"]["task_id"]) for frame in sse_frames] == [("new_task", task_id)]
    inbox = agent_http.inbox(hub_b, "coder")
    assert [message["id"] for message in inbox["messages"]] == [task_id]


def test_processes_sharing_redis_share_one_write_count(hub_server, agent_http: Agent):
    # The same limit and (fresh) count prefix in both servers; their storage is REDIS_URL, as in production.
    env = {"COMMHUB_WRITE_RATE_LIMIT": "4/minute", "COMMHUB_RATE_LIMIT_PREFIX": f"test-{uuid.uuid4().hex}"}
    hub_a, hub_b = hub_server(env=env), hub_server(env=env)

    def send(hub: Hub, task: str) -> httpx.Response:
        body = {"alias": "coder", "task": task}
        return httpx.post(f"{hub.url}/api/v1/tasks", json=body, headers=agent_http.headers, timeout=30)

    sent = [send(hub, f"task {n}") for n, hub in enumerate((hub_a, hub_a, hub_b, hub_b))]
    assert [reply.status_code for reply in sent] == [201, 201, 201, 201], [reply.text for reply in sent]

    # Each process made only 2 of the 4: only a shared count refuses the fifth, on either.
    for hub in (hub_a, hub_b):
        refused = send(hub, "one too many")
        assert refused.status_code == 429, refused.text
        assert refused.json()["error"] == "rate_limited"
        assert 1 <= int(refused.headers["Retry-After"]) <= 60
