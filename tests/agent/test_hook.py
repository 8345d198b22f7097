"""`commhub-agent hook stop` fed the JSON Claude Code sends a Stop hook, against a live hub."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.helpers.live import companion_command, companion_env, rest

pytestmark = pytest.mark.django_db(transaction=True)

ALIAS = "claude-2"


def stop_hook(hub, worker, state_dir, *, active: bool) -> tuple[int, str]:
    # What Claude Code writes to a Stop hook's stdin (hooks reference: common fields + stop_hook_active).
    hook_input = {
        "session_id": "7f1c2e9a-0d3b-4c55-9a51-1b2f3c4d5e6f",
        "transcript_path": "/home/dev/.claude/projects/-work-repo/7f1c2e9a.jsonl",
        "cwd": "/work/repo",
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": active,
    }
    done = subprocess.run(
        companion_command("hook", "stop", "--alias", ALIAS),
        input=json.dumps(hook_input),
        capture_output=True,
        text=True,
        env=companion_env(hub, worker, state_dir),
        timeout=60,
    )
    return done.returncode, done.stdout


def send(hub, dispatcher, text: str) -> dict[str, Any]:
    reply = rest(hub, dispatcher, "POST", "/tasks", json={"alias": ALIAS, "task": text, "from_session": "lead"})
    assert reply["ok"]
    return reply


def test_stop_hook_blocks_for_new_tasks_once_and_otherwise_lets_the_session_stop(
    live_hub, dispatcher, worker, state_dir
):
    # Nothing waiting: exit 0 and no output, so Claude Code stops.
    assert stop_hook(live_hub, worker, state_dir, active=False) == (0, "")

    first, second = send(live_hub, dispatcher, "fix the flaky test"), send(live_hub, dispatcher, "bump the version")
    code, out = stop_hook(live_hub, worker, state_dir, active=False)
    assert code == 0
    answer = json.loads(out)
    assert answer["decision"] == "block"
    for reply, text in ((first, "fix the flaky test"), (second, "bump the version")):
        assert f"task_id={reply['task_id']}" in answer["reason"] and text in answer["reason"]
    assert "ack_inbox" in answer["reason"] and "report_completion" in answer["reason"]

    # The session carried on and stops again, the tasks still pending: it is not told twice.
    assert stop_hook(live_hub, worker, state_dir, active=True) == (0, "")

    third = send(live_hub, dispatcher, "write the changelog")
    code, out = stop_hook(live_hub, worker, state_dir, active=True)
    reason = json.loads(out)["reason"]
    assert third["task_id"] in reason and first["task_id"] not in reason and second["task_id"] not in reason

    # A hub that cannot be reached never traps a session.
    send(live_hub, dispatcher, "never shown: the hub is down")
    live_hub.process.terminate()
    live_hub.process.wait(timeout=15)
    assert stop_hook(live_hub, worker, state_dir, active=False) == (0, "")
