"""What the companion tells the model names the hub's tools with their real arguments: a model that
follows the Stop hook's reason word for word is never refused for an argument that does not exist."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from hub_tools.tools import TOOLS_BY_NAME

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "agent"))
from commhub_agent.hook import reason_for

CALL = re.compile(r"\b([a-z_]+)\(([^)]*)\)")


def test_the_stop_hooks_reason_names_each_tool_with_its_arguments() -> None:
    message = {"id": "msg_1", "type": "task", "task_id": "task_1", "from_session": "lead", "content": "x"}
    text = reason_for("coder-1", [message])

    calls = [(name, args) for name, args in CALL.findall(text) if name in TOOLS_BY_NAME]
    assert {name for name, _ in calls} >= {"ack_inbox", "report_status", "report_completion", "send_reply"}
    for name, args in calls:
        for argument in re.findall(r"(?:^|,)\s*([a-z_]+)=", args):
            assert argument in TOOLS_BY_NAME[name].params, f"{name}: {argument!r} is not one of its arguments"
        missing = set(TOOLS_BY_NAME[name].required) - set(re.findall(r"([a-z_]+)=", args))
        assert not missing, f"{name} is shown without its required {sorted(missing)}"
