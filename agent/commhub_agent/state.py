"""What a companion remembers across crashes: the channel's feed position, the runner's journal."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any


def default_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(os.environ.get("COMMHUB_AGENT_STATE_DIR") or os.path.join(base, "commhub-agent"))


def safe_name(alias: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", lambda m: f"%{ord(m.group()):x}", alias)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Position:
    """The last feed position a channel delivered, in a small JSON file.

    Saving is split in two so the caller can put the notification between them: `prepare` writes
    and fsyncs a temporary file (slow), `commit` renames it into place (one syscall). A process
    killed between its write to stdout and the rename shows that one event again on restart; the
    window is a few microseconds, not an fsync long.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tmp = path.with_name(path.name + ".tmp")
        path.parent.mkdir(parents=True, exist_ok=True)

    def load(self) -> int | None:
        try:
            return int(json.loads(self.path.read_text())["last_event_id"])
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError):
            return None  # a torn or foreign file: start from what comes next rather than crash

    def prepare(self, event_id: int) -> None:
        with open(self._tmp, "w") as handle:
            json.dump({"last_event_id": event_id}, handle)
            handle.flush()
            os.fsync(handle.fileno())

    def commit(self) -> None:
        os.replace(self._tmp, self.path)

    def save(self, event_id: int) -> None:
        self.prepare(event_id)
        self.commit()
        _fsync_dir(self.path.parent)


class Journal:
    """The runner's log of deliveries, one JSON line each, fsynced: started, done (with the result
    to report), reported. Keyed by inbox message id, so a retried task (a new delivery) runs again
    while a delivery already run never does."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.entries: dict[str, dict[str, Any]] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a line torn by a crash mid-write: its step is simply not recorded
                self.entries.setdefault(record["message_id"], {}).update(record)

    def record(self, message_id: str, **fields: Any) -> None:
        record = {"message_id": message_id, **fields}
        with open(self.path, "a") as handle:
            handle.write(json.dumps(record) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        self.entries.setdefault(message_id, {}).update(record)

    def state(self, message_id: str) -> str | None:
        return self.entries.get(message_id, {}).get("state")

    def unfinished(self) -> list[dict[str, Any]]:
        """Deliveries started or done but not yet reported to the hub."""
        return [dict(e) for e in self.entries.values() if e.get("state") in ("started", "done")]
