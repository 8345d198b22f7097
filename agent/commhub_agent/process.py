"""Processes the companion starts: read them line by line, stop them with everything they started,
find those a killed supervisor left running."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
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


def kill_orphans(variable: str, value: str) -> list[int]:
    """SIGKILL the process groups of processes whose environment holds variable=value: the runs a
    killed supervisor left behind (each in its own session; their environment names their delivery,
    so a reused pid is never mistaken for one). Linux only (/proc); elsewhere nothing is found."""
    needle = f"{variable}={value}".encode()
    killed = []
    for entry in Path("/proc").glob("[0-9]*") if Path("/proc/self/environ").exists() else ():
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            group = os.getpgid(int(entry.name))
            if group != os.getpgrp():
                os.killpg(group, signal.SIGKILL)
                killed.append(group)
        except (OSError, ValueError):
            continue  # gone meanwhile, or not ours to read
    return killed


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
