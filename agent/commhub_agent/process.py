"""Processes the companion starts: read them line by line, stop them with everything they started."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from typing import Any

import anyio
from anyio.abc import Process


async def lines(stream: Any) -> AsyncIterator[str]:
    """A byte stream as text lines (each with its newline, the last one maybe without)."""
    buffer = b""
    async for chunk in stream:
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        for line in complete:
            yield line.decode(errors="replace") + "\n"
    if buffer:
        yield buffer.decode(errors="replace")


async def stop_group(process: Process, *, grace: float = 3.0) -> None:
    """Stop a process started with start_new_session and everything it started (its process group):
    SIGTERM, `grace` seconds, then SIGKILL."""
    if process.returncode is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        with anyio.move_on_after(grace):
            await process.wait()
            return
