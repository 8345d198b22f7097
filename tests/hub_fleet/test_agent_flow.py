"""One agent's whole loop through the services: dispatch, inbox, ack, working, completion."""

from tests.helpers.calls import ack_inbox, get_all_status, get_inbox, get_task, report_completion, send_task


def test_a_task_travels_from_dispatch_to_completion(agent, online):
    online("coder")
    sent = send_task(actor=agent, alias="coder", task="write quicksort")
    assert sent["session_status"] == "idle"
    inbox = get_inbox(actor=agent, alias="coder")
    assert [m["id"] for m in inbox["messages"]] == [sent["message_id"]]
    assert ack_inbox(actor=agent, alias="coder", message_id=sent["message_id"]) == {"ok": True}
    online("coder", status="working", task=sent["task_id"])
    done = report_completion(actor=agent, alias="coder", task=sent["task_id"], result="done")
    got = get_task(actor=agent, task_id=sent["task_id"])
    assert got["task"]["status"] == "replied", got
    assert [e["to_status"] for e in got["events"]] == ["delivered", "acked", "running", "replied"]
    assert done["task_id"] == sent["task_id"]
    (session,) = get_all_status(actor=agent)["sessions"]
    assert (session["status"], session["task"], session["progress"]) == ("idle", None, 0)
