"""One agent's whole loop through the services: dispatch, inbox, ack, working, completion."""

from tests.helpers.calls import completion_report, inbox_ack, inbox_list, session_list, task_get, task_send


def test_a_task_travels_from_dispatch_to_completion(agent, online):
    online("coder")
    sent = task_send(actor=agent, alias="coder", task="write quicksort")
    assert sent["session_status"] == "idle"
    inbox = inbox_list(actor=agent, alias="coder")
    assert [m["id"] for m in inbox["messages"]] == [sent["message_id"]]
    assert inbox_ack(actor=agent, alias="coder", message_id=sent["message_id"]) == {"ok": True}
    online("coder", status="working", task=sent["task_id"])
    done = completion_report(actor=agent, alias="coder", task=sent["task_id"], result="done")
    got = task_get(actor=agent, task_id=sent["task_id"])
    assert got["task"]["status"] == "replied", got
    assert [e["to_status"] for e in got["events"]] == ["delivered", "acked", "running", "replied"]
    assert done["task_id"] == sent["task_id"]
    (session,) = session_list(actor=agent)["sessions"]
    assert (session["status"], session["task"], session["progress"]) == ("idle", None, 0)
