"""Every flag the node's runtime adapters pass exists in the agent CLIs installed from npm (pinned in
package.json), so a CLI release that drops or renames one breaks CI rather than a user's fleet.

Each adapter exposes the argv it runs (`codex_command_line(options, job)`, and
`claude_command_line(options, job)` once the claude adapter has it); this builds it with every
option set and checks each `--flag` / `-X` against the CLI's own `--help`, and a value against the
flag's listed choices (clap's `[possible values: ...]`, commander's `(choices: ...)`). Nothing
here reaches a model.

Usage: agent_cli_flags.py [BIN_DIR]   (default: node_modules/.bin next to this file)
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "agent"))  # the companion, without installing it

from commhub_agent.node.runtime import Job  # noqa: E402

FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
CHOICES = re.compile(r"\[possible values: ([^\]]*)\]|\(choices: ([^)]*)\)")
PROBE = "--commhub-flag-probe"


def declared_flags(help_text: str) -> dict[str, tuple[str, ...] | None]:
    """The flags a --help text declares, each with its choices if its description (which may wrap over
    several lines) lists them."""
    blocks: list[tuple[list[str], list[str]]] = []  # (names, description lines)
    for line in help_text.splitlines():
        stripped = line.strip()
        # A declaration sits near the margin (clap: 2 or 6 spaces, commander: 2); a description line
        # that wraps onto a flag's name is indented further.
        if FLAG.match(stripped) and len(line) - len(line.lstrip()) < 8:
            head, *description = re.split(r"\s{2,}", stripped, maxsplit=1)
            blocks.append((FLAG.findall(head), description))
        elif blocks:
            blocks[-1][1].append(stripped)
    flags: dict[str, tuple[str, ...] | None] = {}
    for names, description in blocks:
        match = CHOICES.search(" ".join(description))
        choices = None
        if match and match.group(1) is not None:  # clap: [possible values: a, b]
            choices = tuple(value.strip() for value in match.group(1).split(","))
        elif match:  # commander: (choices: "a", "b", default: "a")
            choices = tuple(re.findall(r'"([^"]*)"', match.group(2).split("default:")[0]))
        for name in names:
            flags.setdefault(name, choices)
    return flags


def missing_flags(argv: list[str], help_text: str) -> list[str]:
    """What in `argv` (one command's arguments, without its subcommand) its --help does not declare,
    or a value outside a flag's listed choices."""
    flags = declared_flags(help_text)
    problems = []
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        name, eq, inline = arg.partition("=")
        if FLAG.fullmatch(name) is None:
            continue  # a value or a positional (the prompt's "-" too)
        if name not in flags:
            problems.append(f"{name} is not in --help")
            continue
        choices = flags[name]
        value = inline if eq else (argv[i + 1] if i + 1 < len(argv) else None)
        if choices is not None and value not in choices:
            problems.append(f"{name} {value!r} is not one of {', '.join(choices)}")
    return problems


def parser_refusal(argv: list[str]) -> str | None:
    """The CLI's own parser on the whole command line: None if it accepts it, else its error. A probe
    flag no CLI has goes last, so the parser stops there with its usage error (exit 2 for clap, 1
    for commander) and nothing runs; an earlier error (an unknown or misplaced flag, a bad value)
    names that instead. This also covers flags a CLI accepts but leaves out of --help."""
    done = subprocess.run([*argv, PROBE], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    error = next((line for line in done.stderr.splitlines() if "error" in line.lower()), done.stderr.strip())
    if done.returncode != 0 and PROBE in error:
        return None
    return error or f"exit {done.returncode} without naming {PROBE}"


def flags_exist(argv: list[str], help_text: str) -> bool:
    return not missing_flags(argv, help_text)


def help_of(*command: str) -> str:
    done = subprocess.run([*command, "--help"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} --help failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def check(label: str, argv: list[str], parts: list[tuple[list[str], str]]) -> list[str]:
    """One command line: its CLI's parser accepts it, and each part (a command's own arguments, with
    that command's --help) declares every flag. A flag the parser accepts but --help leaves out (a
    hidden option) is noted, not failed."""
    print(f"{label}: {' '.join(argv[1:])}")
    refusal = parser_refusal(argv)
    problems = [f"{label}: the CLI refuses it: {refusal}"] if refusal else []
    for args, help_text in parts:
        for problem in missing_flags(args, help_text):
            if refusal is None and problem.endswith("is not in --help"):
                print(f"{label}: note: {problem}, but its parser accepts it (a hidden option)")
            else:
                problems.append(f"{label}: {problem}")
    return problems


def check_codex(bin_dir: Path) -> list[str]:
    from commhub_agent.node.runtimes.codex import codex_command_line

    codex = str(bin_dir / "codex")
    options = {
        "binary": codex,
        "sandbox": "workspace-write",
        "model": "gpt-5.3-codex",
        "profile": "ci",
        "config": ["model_reasoning_effort=high"],
        "skip_git_repo_check": True,
    }
    cwd = Path.cwd()
    fresh = codex_command_line(options, Job(task_id="t", alias="a", prompt="p", cwd=cwd, env={}))
    resumed = codex_command_line(
        options, Job(task_id="t", alias="a", prompt="p", cwd=cwd, env={}, resume="0199a213-81c0-7800-8aa1-bbab2a035a53")
    )
    exec_help, resume_help = help_of(codex, "exec"), help_of(codex, "exec", "resume")
    at = resumed.index("resume")
    # Options before `resume` are exec's own; clap hands what follows to the subcommand.
    return check("codex exec", fresh, [(fresh[2:], exec_help)]) + check(
        "codex exec resume", resumed, [(resumed[2:at], exec_help), (resumed[at + 1 :], resume_help)]
    )


def check_claude(bin_dir: Path) -> list[str]:
    if importlib.util.find_spec("commhub_agent.node.runtimes.claude") is None:
        print("claude: no claude adapter yet, nothing to check")
        return []
    from commhub_agent.node.runtimes import claude as adapter

    if not hasattr(adapter, "claude_command_line"):
        return ["claude: the adapter exposes no claude_command_line(options, job) to check"]
    claude = str(bin_dir / "claude")
    spec = getattr(adapter.ClaudeRuntime, "options_spec", {})
    every = {
        "max_turns": 30,
        "allowed_tools": ["Read", "Bash(git:*)"],
        "disallowed_tools": ["WebFetch"],
        "permission_mode": "acceptEdits",
        "model": "sonnet",
        "system_prompt": "You are one of CommHub's agents.",
        "cli_path": claude,
    }
    unknown = sorted(set(spec) - set(every))
    options = {name: value for name, value in every.items() if name in spec}

    async def ask(question: str, choices: list[str]) -> str:
        return choices[0]

    claude_help = help_of(claude)
    problems = [f"claude: options {', '.join(unknown)} are not exercised here: add them to `every`"] if unknown else []
    for resume, asks in ((None, None), ("8f0c4f52-4d6e-4a59-9a4b-6b0f1a8f3c11", ask)):
        job = Job(task_id="t", alias="a", prompt="p", cwd=Path.cwd(), env={}, resume=resume, budget_usd=1.0, ask=asks)
        argv = [claude, *adapter.claude_command_line(options, job)[1:]]
        problems += check("claude", argv, [(argv[1:], claude_help)])
    return problems


def main() -> int:
    bin_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "node_modules" / ".bin"
    problems = check_codex(bin_dir) + check_claude(bin_dir)
    for problem in problems:
        print(f"agent_cli_flags: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
