"""The `command` runtime: any program, once per task, as `commhub-agent run` runs it.

The task text goes on stdin (and, with the rest of the task, in the COMMHUB_* environment the node
sets). A stdout line `progress: 40` or `progress: 40% writing tests` is progress, left out of the
result; every other stdout line is the result. Exit status 0 succeeds; any other fails the task
with the exit status and the tail of stderr.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import anyio
from anyio.abc import Process

from commhub_agent.hub import RESULT_MAX, truncate
from commhub_agent.node.runtime import Event, Finished, Job, Progress, Run, Runtime, Started
from commhub_agent.process import lines, stop_group

PROGRESS = re.compile(r"^\s*progress:\s*(\d{1,3}(?:\.\d+)?)\s*%?\s*(.*)$", re.IGNORECASE)
STDERR_TAIL = 2_000


class CommandRuntime(Runtime):
    name = "command"
    echoes = True
    options_spec: ClassVar[dict[str, type | tuple[type, ...]]] = {}

    def __init__(self, options: dict[str, Any], *, key: str = "options", command: tuple[str, ...] = ()) -> None:
        super().__init__(options, key=key)
        self.command = list(command)

    async def start(self, job: Job) -> Run:
        process = await anyio.open_process(self.command, cwd=job.cwd, env=job.env, start_new_session=True)
        return CommandRun(process, job)


class CommandRun(Run):
    def __init__(self, process: Process, job: Job) -> None:
        self.process, self.job = process, job
        self.stopped = False

    async def events(self) -> AsyncIterator[Event]:
        send, receive = anyio.create_memory_object_stream[Event](100)
        output: list[str] = []
        errors: list[str] = []
        yield Started()
        async with anyio.create_task_group() as io:
            io.start_soon(self._feed)
            io.start_soon(self._read_stdout, send, output)
            io.start_soon(self._read_stderr, errors)
            async with receive:
                async for event in receive:
                    yield event
            await self.process.wait()
        code = self.process.returncode
        tail = truncate("".join(errors), STDERR_TAIL, keep="tail")
        text = "".join(output)
        if self.stopped:
            yield Finished(False, f"stopped\n{tail}".rstrip(), error="stopped")
        elif code == 0:
            yield Finished(True, truncate(text, RESULT_MAX, keep="tail"))
        else:
            failed = f"failed: exit status {code}\n--- stderr (tail) ---\n{tail}\n--- output ---\n{text}"
            yield Finished(False, truncate(failed, RESULT_MAX), error=f"exit {code}")

    async def stop(self) -> None:
        self.stopped = True
        with anyio.CancelScope(shield=True):
            await stop_group(self.process)

    async def _feed(self) -> None:
        assert self.process.stdin is not None
        try:
            await self.process.stdin.send(self.job.prompt.encode())
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass  # the program does not read its stdin
        finally:
            await self.process.stdin.aclose()

    async def _read_stdout(self, send: Any, output: list[str]) -> None:
        assert self.process.stdout is not None
        async with send:
            async for line in lines(self.process.stdout):
                self._echo(line)
                match = PROGRESS.match(line)
                if match is None:
                    output.append(line)
                    continue
                percent = min(100.0, float(match.group(1)))
                await send.send(Progress(match.group(2).strip() or f"{percent:g}%", percent=percent))

    async def _read_stderr(self, errors: list[str]) -> None:
        assert self.process.stderr is not None
        async for line in lines(self.process.stderr):
            self._echo(line)
            errors.append(line)
            if len(errors) > 400:
                del errors[:200]

    def _echo(self, line: str) -> None:
        if self.job.output is not None:
            self.job.output(line)
