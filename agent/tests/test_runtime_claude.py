"""The claude runtime, through the real Claude Agent SDK pointed at a stand-in CLI (`cli_path`).

The stand-in (tests/agent/standins/claude_cli.py) speaks the SDK's stream-json control protocol and replays
transcripts in Claude Code's own format; it keeps its sessions and runs in $CLAUDE_STANDIN_DIR, so these
tests can check what the CLI was asked to do, not only what the adapter reported.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import time
from pathlib import Path

import pytest
from commhub_agent.node.runtime import ConfigError, Finished, Job, Progress, Started, Usage, UsageSoFar
from commhub_agent.node.runtimes.claude import ClaudeRuntime, claude_command_line

STANDIN = Path(__file__).parents[2] / "tests/agent/standins/claude_cli.py"
MODEL = "claude-sonnet-4-5-20250929"  # the stand-in's default model


@pytest.fixture
def standin(tmp_path: Path) -> Path:
    store = tmp_path / "standin"
    store.mkdir()
    return store


def make_job(tmp_path: Path, store: Path, scenario: str = "success", **kw) -> Job:
    usage = kw.pop("usage", None)
    choice = {"scenario": scenario, **({"usage": usage["tokens"], "cost_usd": usage["cost"]} if usage else {})}
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMMHUB_")}
    env["CLAUDE_STANDIN_DIR"] = str(store)
    return Job(
        task_id=kw.pop("task_id", "t1"),
        alias="builder",
        prompt=f"Tidy the README.\nclaude-standin: {json.dumps(choice)}",
        cwd=tmp_path,
        env=env,
        **kw,
    )


def runs(store: Path) -> dict:
    return json.loads((store / "claude-sessions.json").read_text())


async def collect(job: Job, **options) -> list:
    run = await ClaudeRuntime({"cli_path": str(STANDIN), **options}).start(job)
    return [event async for event in run.events()]


def test_a_success_streams_started_progress_usage_and_the_reply(tmp_path, standin):
    tokens = {
        "input_tokens": 31,
        "cache_creation_input_tokens": 1100,
        "cache_read_input_tokens": 20000,
        "output_tokens": 703,
    }
    events = asyncio.run(collect(make_job(tmp_path, standin, usage={"tokens": tokens, "cost": 0.0377})))

    started, finished = events[0], events[-1]
    assert isinstance(started, Started) and started.session
    expected = Usage(tokens_in=31 + 1100 + 20000, tokens_out=703, cost_usd=0.0377, model=MODEL)
    assert finished == Finished(
        ok=True,
        text="Done: README.md now says it was edited by the agent.\nNothing else changed.",
        usage=expected,
        session=started.session,
    )
    assert events[-2] == UsageSoFar(usage=expected)
    progress = [e for e in events if isinstance(e, Progress)]
    assert Progress(text=f"Read {tmp_path}/README.md", tool="Read") in progress
    assert Progress(text=f"Edit {tmp_path}/README.md", tool="Edit", files=[f"{tmp_path}/README.md"]) in progress
    assert Progress(text="I'll read the README first.") in progress
    # Tokens grow as the API calls come in (each counted once, though sent once per content block).
    running = [e.usage.tokens for e in events if isinstance(e, UsageSoFar) and e.usage.cost_usd is None]
    assert running == sorted(running) and running[-1] == expected.tokens
    assert runs(standin)["runs"][0]["session"] == started.session


def test_the_next_task_resumes_the_session_and_the_cli_confirms_it(tmp_path, standin):
    first = asyncio.run(collect(make_job(tmp_path, standin)))[-1]
    second = asyncio.run(collect(make_job(tmp_path, standin, task_id="t2", resume=first.session)))

    assert second[0] == Started(session=first.session)
    assert second[-1].ok and second[-1].session == first.session
    store = runs(standin)
    assert f"resumed {first.session}" in store["log"]
    assert [r["resumed"] for r in store["runs"]] == [None, first.session]


def test_a_session_the_cli_no_longer_has_is_reported_and_not_kept(tmp_path, standin):
    gone = "0b8f3a52-1f4e-4a57-9d1e-2a6f4c1d9e77"
    finished = asyncio.run(collect(make_job(tmp_path, standin, resume=gone)))[-1]

    assert not finished.ok and finished.error == "resume" and finished.session is None
    assert f"No conversation found with session ID: {gone}" in finished.text


@pytest.mark.parametrize(
    ("answer", "reply", "decision"),
    [
        ("allow", "Removed the build directory.", "allowed"),
        ("deny", "I did not remove the build directory: permission was denied.", "denied"),
    ],
)
def test_a_tool_needing_permission_asks_the_operator_and_obeys(tmp_path, standin, answer, reply, decision):
    asked = []

    async def ask(question: str, choices: list[str]) -> str:
        asked.append((question, choices))
        return answer

    events = asyncio.run(collect(make_job(tmp_path, standin, "permission", ask=ask)))

    assert asked == [("Claude wants to use Bash: rm -rf build. Allow?", ["allow", "deny"])]
    assert Progress(text="waiting for permission: Bash rm -rf build", tool="Bash") in events
    assert events[-1].ok and events[-1].text == reply
    assert runs(standin)["log"][-1] == f"permission Bash {decision}"


def test_without_anyone_to_ask_the_cli_denies_on_its_own(tmp_path, standin):
    events = asyncio.run(collect(make_job(tmp_path, standin, "permission")))

    assert events[-1].text == "I did not remove the build directory: permission was denied."
    assert runs(standin)["log"][-1] == "permission Bash denied"


def test_bypass_permissions_never_asks(tmp_path, standin):
    async def ask(question: str, choices: list[str]) -> str:
        raise AssertionError("asked under bypassPermissions")

    events = asyncio.run(
        collect(make_job(tmp_path, standin, "permission", ask=ask), permission_mode="bypassPermissions")
    )

    assert events[-1].text == "Removed the build directory."


def test_max_turns_fails_with_its_word_and_the_usage(tmp_path, standin):
    tokens = {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 90, "output_tokens": 7}
    finished = asyncio.run(
        collect(make_job(tmp_path, standin, "max_turns", usage={"tokens": tokens, "cost": 0.002}), max_turns=2)
    )[-1]

    assert not finished.ok and finished.error == "max_turns"
    assert "maximum number of turns" in finished.text
    assert finished.usage == Usage(tokens_in=100, tokens_out=7, cost_usd=0.002, model=MODEL)


def test_the_budget_reaches_the_cli_and_its_refusal_is_budget(tmp_path, standin):
    finished = asyncio.run(collect(make_job(tmp_path, standin, "budget", budget_usd=0.5)))[-1]

    assert not finished.ok and finished.error == "budget"
    assert "($0.5)" in finished.text  # the stand-in quotes the --max-budget-usd it was given


def test_a_cli_that_dies_without_a_result_fails_with_its_stderr(tmp_path, standin):
    finished = asyncio.run(collect(make_job(tmp_path, standin, "crash")))[-1]

    assert not finished.ok and finished.error == "exit"
    assert "status 134" in finished.text and "JavaScript heap out of memory" in finished.text


def test_stop_ends_a_hung_run_and_leaves_no_process(tmp_path, standin):
    async def scenario() -> tuple[list, float, int]:
        run = await ClaudeRuntime({"cli_path": str(STANDIN)}).start(make_job(tmp_path, standin, "hang"))
        events = []
        async for event in run.events():
            events.append(event)
            if isinstance(event, Progress) and event.tool == "Bash":
                break
        while not any(line.startswith("hanging pid") for line in runs(standin)["log"]):
            await asyncio.sleep(0.05)
        pid = int(next(line for line in runs(standin)["log"] if line.startswith("hanging pid")).split()[-1])
        began = time.monotonic()
        await run.stop()
        await run.stop()  # idempotent
        events += [event async for event in run.events()]
        return events, time.monotonic() - began, pid

    events, took, pid = asyncio.run(scenario())

    assert events[-1].error == "stopped" and not events[-1].ok
    assert events[-1].session == events[0].session
    assert took < 4  # TERM is enough: the grace before KILL is 5 s
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_the_node_credentials_do_not_reach_the_cli(tmp_path, standin, monkeypatch):
    monkeypatch.setenv("COMMHUB_TOKEN", "ntok_secret")
    job = make_job(tmp_path, standin)
    job.env["COMMHUB_URL"] = "http://hub.example"  # what the node does pass on arrives

    asyncio.run(collect(job))

    assert runs(standin)["runs"][0]["commhub_env"] == ["COMMHUB_URL"]


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"max_turns": "30"}, "agents.b.options.max_turns"),
        ({"max_turns": 0}, "agents.b.options.max_turns"),
        ({"permission_mode": "yolo"}, "agents.b.options.permission_mode"),
        ({"allowed_tools": ["Read", 3]}, "agents.b.options.allowed_tools"),
        ({"cli_path": "/nowhere/claude"}, "agents.b.options.cli_path"),
        ({"max_budget_usd": 5.0}, "agents.b.options.max_budget_usd"),
    ],
)
def test_bad_options_are_refused_by_key(options, key):
    with pytest.raises(ConfigError) as refused:
        ClaudeRuntime(options, key="agents.b.options")
    assert refused.value.key == key


def test_without_the_sdk_the_agent_runtime_is_refused_with_the_install_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "claude_agent_sdk", None)  # what an absent package imports as
    with pytest.raises(ConfigError) as refused:
        ClaudeRuntime({}, key="agents.b.options")
    assert refused.value.key == "agents.b.runtime" and "pipx install './agent[claude]'" in refused.value.reason


def test_version_asks_the_cli():
    assert ClaudeRuntime.version({"cli_path": str(STANDIN)}) == "2.1.332"
    assert ClaudeRuntime.version({"cli_path": "/nowhere/claude"}) is None


# The SDK warns that whole tools in allowed_tools never reach can_use_tool: true, and meant here.
@pytest.mark.filterwarnings("ignore::claude_agent_sdk.CanUseToolShadowedWarning")
def test_the_command_line_is_the_one_the_sdk_builds(tmp_path, standin):
    async def ask(question: str, choices: list[str]) -> str:
        return "allow"

    options = {"cli_path": str(STANDIN), "max_turns": 7, "allowed_tools": ["Read", "Grep"], "model": "sonnet"}
    job = make_job(tmp_path, standin, resume="5f1c", budget_usd=1.5, ask=ask)

    argv = claude_command_line(options, job)

    assert argv[0] == str(STANDIN)
    pairs = list(itertools.pairwise(argv))
    for pair in [
        ("--max-turns", "7"),
        ("--allowedTools", "Read,Grep"),
        ("--model", "sonnet"),
        ("--max-budget-usd", "1.5"),
        ("--permission-prompt-tool", "stdio"),
    ]:
        assert pair in pairs
    assert "--resume=5f1c" in argv
    without_ask = claude_command_line(options, make_job(tmp_path, standin))
    assert "--permission-prompt-tool" not in without_ask
