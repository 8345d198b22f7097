"""/ws/dashboard is read-only: whatever a client sends is ignored, and the socket lives on."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from hub_agents.services import membership_set
from tests.helpers.calls import send_task
from tests.helpers.dashboard import signed_in, websocket

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    "frame", [{"text_data": "not json {"}, {"bytes_data": b"\x00\xff binary"}, {"text_data": '{"type": "send_task"}'}]
)
def test_anything_a_client_sends_is_ignored_and_the_socket_stays_open(frame, network, agent, django_user_model):
    operator = django_user_model.objects.create_user("operator", password="x")
    membership_set(user=operator, network=network, role="viewer")
    headers = signed_in(operator)

    async def talk() -> tuple[bool, dict, bool, dict]:
        socket = websocket(headers)
        connected, _ = await socket.connect()
        hello = await socket.receive_json_from(timeout=10)
        await socket.send_to(**frame)
        quiet = await socket.receive_nothing(timeout=0.3)
        await sync_to_async(send_task)(actor=agent, alias="coder", task="still live")
        pushed = await socket.receive_json_from(timeout=10)
        await socket.disconnect()
        return connected, hello, quiet, pushed

    connected, hello, quiet, pushed = async_to_sync(talk)()

    assert connected and hello["type"] == "hello"
    assert quiet  # no answer to what it sent
    assert (pushed["type"], pushed["payload"]["content"]) == ("new_task", "still live")
