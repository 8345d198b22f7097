"""The program `commhub-agent run` runs in the tests, standing in for Codex or `claude -p`.

The task text says what to do: "fail" exits 3 after writing to stderr, "sleep S" sleeps S seconds,
"write" writes the file done-<task id>.txt in the working directory.
Each run appends "start <task id> <time>" and "end <task id> <time>" to $FAKE_AGENT_LOG.
"""

from __future__ import annotations

import os
import sys
import time

task = sys.stdin.read()
task_id = os.environ["COMMHUB_TASK_ID"]
log = os.environ["FAKE_AGENT_LOG"]


def note(what: str) -> None:
    with open(log, "a") as handle:
        handle.write(f"{what} {task_id} {time.time()} {os.getpid()}\n")


note("start")
assert task == os.environ["COMMHUB_TASK"], "the task text comes on stdin and in the environment"
print("progress: 50 half way", flush=True)
words = task.split()
pause = float(words[words.index("sleep") + 1]) if "sleep" in words else 0.3
time.sleep(pause)
if "write" in words:
    with open(f"done-{task_id}.txt", "w") as handle:
        handle.write(task)
print(f"done: {task} (from {os.environ['COMMHUB_TASK_FROM']}, priority {os.environ['COMMHUB_TASK_PRIORITY']})")
note("end")
if "fail" in words:
    print(f"something broke in {task_id}", file=sys.stderr)
    sys.exit(3)
