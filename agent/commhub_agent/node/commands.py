"""What the node keeps for the hub's commands (node_command): each run's last output lines, and the
redaction every line passes before it leaves the machine in a tail.

A run's lines go into a ring buffer as the runtime prints them (the command runtime hands over every
line; the SDK runtimes their progress texts); a tail answers the last N of them, each with what looks
like a secret replaced: the hub token, `sk-...` keys, `Bearer ...` credentials, hub tokens
(ntok_/utok_...), and the values of the run's environment variables named *TOKEN*, *KEY* or *SECRET*.
"""

from __future__ import annotations

import re
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping

TAIL_KEEP = 500  # lines kept of each run (the most a tail may ask for)
RUNS_KEPT = 100  # finished runs whose lines a tail may still ask for
REDACTED = "[redacted]"
SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD", re.IGNORECASE)
MIN_SECRET = 6  # shorter environment values ("1", "yes") would redact ordinary words
PATTERNS = (
    re.compile(r"\bsk-[A-Za-z0-9_-]{6,}"),
    re.compile(r"\b(?:ntok|utok)_[A-Za-z0-9_-]{6,}"),
    re.compile(r"(?i)\bBearer\s+[A-Za-z0-9._~+/=-]+"),
)


class Redactor:
    """Replaces the secrets it knows of, and what looks like one, in a line."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Longest first: a secret that holds another is replaced whole.
        self.secrets = sorted({s for s in secrets if len(s) >= MIN_SECRET}, key=len, reverse=True)

    @classmethod
    def for_run(cls, env: Mapping[str, str], hub_token: str) -> Redactor:
        return cls([hub_token, *(value for name, value in env.items() if SECRET_NAME.search(name))])

    def __call__(self, line: str) -> str:
        for secret in self.secrets:
            line = line.replace(secret, REDACTED)
        for pattern in PATTERNS:
            line = pattern.sub(REDACTED, line)
        return line


class Tails:
    """Each run's last lines by task id: the running ones, and the last RUNS_KEPT that finished."""

    def __init__(self) -> None:
        self.runs: OrderedDict[str, tuple[deque[str], Redactor]] = OrderedDict()

    def open(self, task_id: str, redactor: Redactor) -> deque[str]:
        lines: deque[str] = deque(maxlen=TAIL_KEEP)
        self.runs[task_id] = (lines, redactor)
        self.runs.move_to_end(task_id)
        while len(self.runs) > RUNS_KEPT:
            self.runs.popitem(last=False)
        return lines

    def last(self, task_id: str, count: int) -> list[str] | None:
        """The run's last `count` lines, redacted; None: no run of that task here."""
        found = self.runs.get(task_id)
        if found is None:
            return None
        lines, redact = found
        return [redact(line.rstrip("\n")) for line in list(lines)[-count:]]
