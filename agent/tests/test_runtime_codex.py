"""The codex runtime against the Codex stand-in (tests/agent/standins/codex), which parses the real
CLI's options (refusing unknown ones) and replays `codex exec --json` transcripts."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import anyio
import pytest
from commhub_agent.node.runtime import ConfigError, Finished, Job, Progress, Started, Usage, UsageSoFar
from commhub_agent.node.runtimes.codex import CodexRuntime, codex_command_line

STANDINS = Path(__file__).parents[2] / "tests/agent/standins"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    return {
        "PATH": f"{STANDINS}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(home),
        "CODEX_STANDIN_DIR": str(tmp_path / "store"),
    }


@pytest.fixture
def runtime(tmp_path: Path) -> CodexRuntime:
    return CodexRuntime({}, threads_file=tmp_path / "state" / "codex-threads.json")


def job(tmp_path: Path, env: dict[str, str], prompt: str, *, resume: str | None = None, name: str = "work") -> Job:
    cwd = tmp_path / name
    cwd.mkdir(exist_ok=True)
    return Job(task_id="t1", alias="coder", prompt=prompt, cwd=cwd, env=env, resume=resume)


def run(runtime: CodexRuntime, the_job: Job) -> list:
    async def collect() -> list:
        handle = await runtime.start(the_job)
        return [event async for event in handle.events()]

    return anyio.run(collect)


def calls(env: dict[str, str]) -> list[dict]:
    return [json.loads(line) for line in (Path(env["CODEX_STANDIN_DIR"]) / "calls.jsonl").read_text().splitlines()]


def test_a_run_streams_its_thread_progress_and_exact_usage(tmp_path, env, runtime):
    prompt = (
        "add the notes\n@codex usage 1200 300 450 90\n@codex write notes.txt first draft\n@codex reply Notes added."
    )
    prompt += "\n" + "x" * 200_000  # past Linux's 128 KiB cap on one argument: the prompt goes on stdin
    events = run(runtime, job(tmp_path, env, prompt))

    thread = calls(env)[0]["thread_id"]
    assert events[0] == Started(session=thread)
    assert Progress("/bin/bash -lc ls", tool="shell") in events
    assert Progress("edited notes.txt", files=["notes.txt"]) in events
    assert events[-2:] == [
        UsageSoFar(Usage(tokens_in=1200, tokens_out=450)),
        Finished(True, "Notes added.", usage=Usage(tokens_in=1200, tokens_out=450), session=thread),
    ]
    assert (tmp_path / "work" / "notes.txt").read_text() == "first draft\n"
    # The prompt arrived whole, on stdin, with the default sandbox and the git check skipped.
    assert calls(env)[0]["prompt"] == prompt
    assert (calls(env)[0]["sandbox"], calls(env)[0]["skip_git_repo_check"]) == ("workspace-write", True)


def test_a_resumed_thread_counts_only_this_run_even_after_a_restart(tmp_path, env, runtime):
    first = run(runtime, job(tmp_path, env, "one\n@codex usage 1000 100 200 10"))
    thread = first[-1].session

    second = run(runtime, job(tmp_path, env, "two\n@codex usage 70 7 30 3", resume=thread, name="other"))
    assert second[0] == Started(session=thread)
    # Codex reports the thread's running total (1070 / 230); the run used 70 / 30.
    assert second[-1] == Finished(True, "done: two", usage=Usage(tokens_in=70, tokens_out=30), session=thread)
    assert [(c["action"], c["thread_id"], Path(c["cwd"]).name) for c in calls(env)] == [
        ("started", thread, "work"),
        ("resumed", thread, "other"),
    ]

    restarted = CodexRuntime({}, threads_file=tmp_path / "state" / "codex-threads.json")
    third = run(restarted, job(tmp_path, env, "three\n@codex usage 5 0 6 0", resume=thread))
    assert third[-1].usage == Usage(tokens_in=5, tokens_out=6)


def test_a_failed_turn_fails_the_run_with_codex_words(tmp_path, env, runtime):
    events = run(runtime, job(tmp_path, env, "go\n@codex fail the prompt was refused"))

    assert isinstance(events[0], Started)
    finished = events[-1]
    assert (finished.ok, finished.error, finished.session) == (False, "turn failed", events[0].session)
    assert finished.text.startswith("the prompt was refused")


def test_a_crash_fails_with_its_exit_status_and_stderr(tmp_path, env, runtime):
    events = run(runtime, job(tmp_path, env, "go\n@codex noise not an event\n@codex exit 3"))

    finished = events[-1]
    assert (finished.ok, finished.error) == (False, "exit 3")
    assert "stand-in asked to exit 3" in finished.text and "not an event" in finished.text
    assert [type(event) for event in events] == [Started, Finished]  # the stray line made no event


def test_resuming_an_unknown_thread_fails_before_starting(tmp_path, env, runtime):
    events = run(runtime, job(tmp_path, env, "go", resume="0199a213-81c0-7800-8aa1-bbab2a035a53"))

    assert len(events) == 1 and events[0].ok is False and events[0].error == "exit 1"
    assert "no rollout found" in events[0].text


def test_stop_ends_a_hung_run_and_its_processes(tmp_path, env, runtime):
    async def scenario() -> tuple[list, int, float]:
        handle = await runtime.start(job(tmp_path, env, "go\n@codex hang"))
        events = []
        stopped_at = 0.0
        async for event in handle.events():
            events.append(event)
            if isinstance(event, Progress):
                stopped_at = time.monotonic()
                await handle.stop()
                await handle.stop()  # idempotent
        return events, handle.process.pid, time.monotonic() - stopped_at

    events, pid, took = anyio.run(scenario)

    assert isinstance(events[0], Started) and events[1] == Progress("/bin/bash -lc 'sleep 3600'", tool="shell")
    assert events[-1].ok is False and events[-1].error == "stopped" and events[-1].session == events[0].session
    assert took < 5
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


def test_the_model_comes_from_the_options_or_codex_config(tmp_path, env):
    (Path(env["HOME"]) / ".codex" / "config.toml").write_text('model = "gpt-5.3-codex"\n')
    plain = CodexRuntime({}, threads_file=tmp_path / "t.json")
    assert run(plain, job(tmp_path, env, "go"))[-1].usage.model == "gpt-5.3-codex"

    chosen = CodexRuntime({"model": "o4-mini", "sandbox": "read-only"}, threads_file=tmp_path / "t.json")
    assert run(chosen, job(tmp_path, env, "go"))[-1].usage.model == "o4-mini"
    assert (calls(env)[-1]["model"], calls(env)[-1]["sandbox"]) == ("o4-mini", "read-only")


def test_the_command_line_puts_every_option_before_resume(tmp_path):
    options = {
        "binary": "/opt/codex",
        "sandbox": "read-only",
        "model": "o4-mini",
        "profile": "ci",
        "config": ["model_reasoning_effort=high", 'shell_environment_policy.inherit="all"'],
        "skip_git_repo_check": False,
    }
    fresh = Job(task_id="t", alias="a", prompt="p", cwd=tmp_path, env={})
    common = ["--json", "--sandbox", "read-only", "--model", "o4-mini", "--profile", "ci"]
    common += ["--config", "model_reasoning_effort=high", "--config", 'shell_environment_policy.inherit="all"']
    assert codex_command_line(options, fresh) == ["/opt/codex", "exec", *common, "--cd", str(tmp_path), "-"]
    resumed = Job(task_id="t", alias="a", prompt="p", cwd=tmp_path, env={}, resume="abc")
    assert codex_command_line(options, resumed)[-4:] == [str(tmp_path), "resume", "abc", "-"]
    assert codex_command_line({}, fresh)[:6] == [
        "codex",
        "exec",
        "--json",
        "--sandbox",
        "workspace-write",
        "--skip-git-repo-check",
    ]


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"sandbox": "full"}, "options.sandbox"),
        ({"sandbox": 1}, "options.sandbox"),
        ({"config": ["no value"]}, "options.config[0]"),
        ({"config": ["=x"]}, "options.config[0]"),
        ({"config": [3]}, "options.config[0]"),
        ({"model": " "}, "options.model"),
        ({"skip_git_repo_check": "yes"}, "options.skip_git_repo_check"),
        ({"max_turns": 3}, "options.max_turns"),
    ],
)
def test_bad_options_are_refused(options, key):
    with pytest.raises(ConfigError) as refused:
        CodexRuntime(options)
    assert refused.value.key == key


def test_version_reads_codex_version(tmp_path):
    assert CodexRuntime.version({"binary": str(STANDINS / "codex")}) == "0.171.0"
    assert CodexRuntime.version({"binary": str(tmp_path / "absent")}) is None
