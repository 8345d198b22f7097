"""`commhub-agent hook stop`: a Claude Code Stop hook that keeps a session going while tasks wait.

Claude Code runs the hook when the model is about to stop, with a JSON object on stdin
(session_id, transcript_path, cwd, hook_event_name "Stop", stop_hook_active). If the alias has
pending tasks the hook has not shown before, it prints {"decision": "block", "reason": ...} and the
session carries on with the reason as its next instruction; otherwise it prints nothing and exits
0, and the session stops. Each message is shown once (a small state file of ids already shown), so
the hook never nags, and never loops: a second stop with nothing new is allowed. When the hub
cannot be reached it lets the session stop (a hook must not trap a session).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from commhub_agent.hub import Config, Hub, HubRefused, HubUnavailable
from commhub_agent.state import default_state_dir, safe_name

EXCERPT = 500
SHOWN_MAX = 5_000  # ids kept; older ones are long acked or expired
PENDING_TYPES = ("task", "broadcast")


def read_hook_input(stream: Any) -> dict[str, Any]:
    try:
        data = json.loads(stream.read() or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _load_shown(path: Path) -> list[str]:
    try:
        shown = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return []
    return shown if isinstance(shown, list) else []


def _save_shown(path: Path, shown: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as handle:
        json.dump(shown[-SHOWN_MAX:], handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def reason_for(alias: str, messages: list[dict[str, Any]]) -> str:
    lines = [
        f"CommHub: {len(messages)} new message(s) waiting for you ({alias}). Before stopping, handle them: "
        f"ack_inbox(alias='{alias}', message_id=<message_id>) to take one; "
        f"report_status(resume_id=<your session>, alias='{alias}', status='working', task=<task_id>, progress=<0-100>) "
        f"as you go; then report_completion(alias='{alias}', task=<task_id>, result=<what you did>), or if "
        f"you cannot, send_reply(alias=<from>, text=<why>, in_reply_to=<task_id>, status='failed', "
        f"from_session='{alias}').",
    ]
    for message in messages:
        content = message.get("content") or ""
        if len(content) > EXCERPT:
            content = content[:EXCERPT] + "… (get_task shows all of it)"
        lines.append(
            f"- [{message.get('priority', 'normal')}] {message.get('type')} task_id={message.get('task_id')} "
            f"message_id={message['id']} from={message.get('from_session')}: {content}"
        )
    return "\n".join(lines)


async def decide(
    config: Config, hook_input: dict[str, Any], state_dir: Path, *, transport: Any = None
) -> dict[str, Any] | None:
    """The hook's answer: a block decision, or None to let the session stop."""
    if hook_input.get("hook_event_name", "Stop") not in ("Stop", "SubagentStop"):
        return None
    hub = Hub(config, timeout=20, transport=transport)
    try:
        inbox = await hub.call("get_inbox", alias=config.alias, limit=100)
    except (HubUnavailable, HubRefused) as exc:
        print(f"commhub-agent hook: the hub did not answer ({exc}); letting the session stop", file=sys.stderr)
        return None
    finally:
        await hub.aclose()
    if not inbox.get("ok"):
        print(f"commhub-agent hook: get_inbox refused: {inbox.get('message')}", file=sys.stderr)
        return None
    path = state_dir / f"{safe_name(config.alias)}.hook.json"
    shown = _load_shown(path)
    seen = set(shown)
    new = [m for m in inbox["messages"] if m.get("type") in PENDING_TYPES and m["id"] not in seen]
    if not new:
        return None
    _save_shown(path, shown + [m["id"] for m in new])
    return {"decision": "block", "reason": reason_for(config.alias, new)}


def run_stop_hook(config: Config, *, state_dir: Path | None, stdin: Any = None, stdout: Any = None) -> int:
    hook_input = read_hook_input(stdin or sys.stdin)
    answer = anyio.run(decide, config, hook_input, state_dir or default_state_dir())
    if answer is not None:
        (stdout or sys.stdout).write(json.dumps(answer) + "\n")
    return 0
