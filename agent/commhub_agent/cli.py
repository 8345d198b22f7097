"""The `commhub-agent` command: node, channel, run and hook."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path
from typing import NoReturn

from commhub_agent import __version__

EPILOG = """The hub's token comes from COMMHUB_TOKEN, its URL from --hub or COMMHUB_URL (the node: its
config's [node] hub). State (the channel's feed position, the runner's journal, the hook's shown ids)
is kept in --state-dir, by default $COMMHUB_AGENT_STATE_DIR or ~/.local/state/commhub-agent; the
node's (its outbox, sessions and workspaces) in its config's state_dir."""


MODES = ("node", "channel", "run", "hook")


class UsageError(Exception):
    """A refusal of the command line, raised rather than printed, so each mode words it its own way."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser, self.message = parser, message


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(self, message)


def parser() -> argparse.ArgumentParser:
    top = Parser(
        prog="commhub-agent",
        description="The agent-side companion of CommHub: supervises a machine's agents (node), wakes Claude"
        " Code (channel), runs one headless agent (run), keeps sessions going (hook).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"commhub-agent {__version__}")
    common = Parser(add_help=False)
    common.add_argument("--hub", help="the hub's URL, e.g. http://127.0.0.1:8000 (default: $COMMHUB_URL)")
    common.add_argument(
        "--alias", default=os.environ.get("COMMHUB_ALIAS"), help="this agent's alias (default: $COMMHUB_ALIAS)"
    )
    common.add_argument("--state-dir", type=Path, help="where to keep state across restarts")
    modes = top.add_subparsers(dest="mode", required=True, metavar="{node,channel,run,hook}")

    node = modes.add_parser(
        "node",
        help="one supervisor for all the agents of this machine: commhub-agent node --config node.toml",
        description="Runs the agents node.toml declares (claude, codex or command runtimes), each task in its own "
        "workspace, with reports journalled on disk and replayed in order after an outage. SIGHUP reloads the "
        "config; SIGTERM drains. Its token (COMMHUB_TOKEN) is the machine's own, bound to the config's aliases "
        "(on the hub: create_token --alias a,b): the node refuses at start an agent its token may not act as. "
        "`commhub-agent node init` writes a commented starter config listing the agent CLIs installed here.",
    )
    node.add_argument("action", nargs="?", choices=["init"], help="init: write a starter config and exit")
    node.add_argument("--config", type=Path, default=Path("node.toml"), help="the node's config (default node.toml)")
    node.add_argument("--hub", help="the hub's URL, written into the starter config by init (default: $COMMHUB_URL)")
    node.add_argument("--force", action="store_true", help="init: overwrite an existing config")

    channel = modes.add_parser(
        "channel", parents=[common], help="a Claude Code channel: a stdio MCP server that pushes the alias's tasks"
    )
    channel.add_argument("--heartbeat", type=float, default=120.0, help="seconds between heartbeats (default 120)")

    run = modes.add_parser(
        "run",
        parents=[common],
        help="run a command for each task: commhub-agent run --alias A -- codex exec",
        description="Runs COMMAND once per task delivered to the alias: the task text on stdin and in "
        "$COMMHUB_TASK, with $COMMHUB_TASK_ID, $COMMHUB_MESSAGE_ID, $COMMHUB_TASK_FROM, $COMMHUB_TASK_PRIORITY "
        "and $COMMHUB_TASK_CONTEXT. A stdout line 'progress: 40' reports progress and is left out of the result. "
        "Exit status 0 completes the task (replied, with the output); any other fails it with the exit status and "
        "the tail of stderr.",
    )
    run.add_argument("--concurrency", type=int, default=1, help="tasks run at once (default 1)")
    run.add_argument("--timeout", type=float, help="seconds a task may run before it is stopped and failed")
    run.add_argument("--workdir", help="working directory per task; {task_id} and {alias} are filled in")
    run.add_argument("--stop-grace", type=float, default=10.0, help="on SIGTERM, seconds running tasks get to finish")
    run.add_argument("--poll", type=float, default=30.0, help="seconds between inbox checks without news (default 30)")
    run.add_argument("--heartbeat", type=float, default=120.0, help="seconds between heartbeats when idle")
    run.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run, and its arguments")

    hook = modes.add_parser("hook", parents=[common], help="Claude Code hooks: `hook stop` for the Stop event")
    hook.add_argument("event", choices=["stop"], help="the hook event (stop)")
    return top


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if _mode(argv) == "hook":
        return _hook(argv)
    try:
        args = parser().parse_args(argv)
        if args.mode == "node":
            return _node(args)
        return _hook(argv) if args.mode == "hook" else _run(args)
    except UsageError as exc:
        argparse.ArgumentParser.error(exc.parser, exc.message)  # usage and the reason, exit status 2


def _mode(argv: list[str]) -> str | None:
    """The mode asked for, read before parsing (so even a command line argparse refuses has one)."""
    for arg in argv:
        if arg == "--":
            return None
        if arg in MODES:
            return arg
    return None


def _hook(argv: list[str]) -> int:
    """`hook stop`. Claude Code reads exit status 2 from a Stop hook as "block and keep going", so
    a hook that cannot work (however it is misconfigured) says why in one line and exits 0: the
    session stops as it would without the hook."""
    try:
        args = parser().parse_args(argv)
        if not args.alias:
            raise UsageError(parser(), "give the agent's alias with --alias or COMMHUB_ALIAS")
        from commhub_agent.hook import run_stop_hook
        from commhub_agent.hub import config_from

        return run_stop_hook(config_from(args.hub, args.alias), state_dir=args.state_dir)
    except UsageError as exc:
        reason = exc.message
    except SystemExit as exc:
        if exc.code in (0, None):  # --help
            return 0
        reason = str(exc.code).removeprefix("commhub-agent: ")
    except Exception as exc:  # a hook must not trap a session, whatever went wrong
        reason = f"{type(exc).__name__}: {exc}"
    print(f"commhub-agent hook: {reason}; letting the session stop", file=sys.stderr, flush=True)
    return 0


def _node(args: argparse.Namespace) -> int:
    if args.action != "init":
        from commhub_agent.node.supervisor import run_node

        return run_node(args.config)
    from commhub_agent.node.detect import installed_runtimes, starter_config

    if args.config.exists() and not args.force:
        raise UsageError(parser(), f"{args.config} exists; give --force to overwrite it")
    found = installed_runtimes()
    hub = args.hub or os.environ.get("COMMHUB_URL")
    args.config.write_text(starter_config(found, hub=hub, name=socket.gethostname()))
    shown = ", ".join(f"{name} {version}" for name, version in found.items() if version) or "none"
    print(f"wrote {args.config} (agent CLIs found: {shown}); edit it, then: commhub-agent node --config {args.config}")
    return 0


def _run(args: argparse.Namespace) -> int:
    if not args.alias:
        raise UsageError(parser(), "give the agent's alias with --alias or COMMHUB_ALIAS")
    from commhub_agent.hub import config_from

    config = config_from(args.hub, args.alias)
    if args.mode == "channel":
        from commhub_agent.channel import run_channel

        run_channel(config, state_dir=args.state_dir, heartbeat=args.heartbeat)
        return 0
    from commhub_agent.runner import Options, run_runner

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise UsageError(parser(), "run needs a command after --, e.g. commhub-agent run --alias A -- codex exec")
    if args.concurrency < 1:
        raise UsageError(parser(), "--concurrency must be at least 1")
    options = Options(
        command=command,
        concurrency=args.concurrency,
        timeout=args.timeout,
        workdir=args.workdir,
        stop_grace=args.stop_grace,
        poll=args.poll,
        heartbeat=args.heartbeat,
    )
    run_runner(config, options, state_dir=args.state_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
