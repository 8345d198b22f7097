"""The node tools' specs (issue 25), gathered by hub_tools.tools after the hub's other own tools.

A node is one machine's supervisor, `commhub-agent node`, hosting the agents its config declares.
report_node is its own heartbeat (host, OS, runtimes, the agents it hosts, its slots); each agent
still sends its own report_status, with the node's node_id. list_nodes is what the fleet page's
node strip shows, for REST and MCP alike.

Commands (issue 28): node_command (owners and admins) sends a node a command through its agents'
event feeds, node_command_ack is the node's answer, node_commands lists them with their states.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.conf import settings

from hub_agents import limits
from hub_agents.models import CommandKind, NodeCommand
from hub_agents.selectors import command_row, node_command_list, node_list
from hub_agents.services import (
    node_command_ack,
    node_command_send,
    node_report,
    require_network_token_for_ack,
    require_network_token_for_node,
)
from hub_tools import args as A
from hub_tools import params as P
from hub_tools.schema import result, rows
from hub_tools.tool import Tool


def _node_id(node_id: str) -> dict[str, Any]:
    return {"node_id": node_id}


def _nodes(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {"nodes": found}


def _command(command: NodeCommand) -> dict[str, Any]:
    return {"command": command_row(command)}


def _commands(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {"commands": found}


def specs() -> list[Tool]:
    def required(param: P.Param) -> P.Param:
        return replace(param, required=True)

    runtimes = P.records(
        "Runtimes found, with versions.",
        {
            "name": P.identifier("The runtime: claude, codex, command, ...", required=True),
            "version": P.identifier("Its version, as its CLI or SDK reports it."),
        },
        max_items=limits.NODE_RUNTIMES_MAX,
        unique_by="name",
    )
    per_agent = limits.CONCURRENT_MAX
    agents = P.records(
        "Its agents; concurrency: tasks at once, running: now.",
        {
            "alias": P.identifier("The agent's alias.", required=True),
            "runtime": P.identifier("The runtime it runs on.", required=True),
            "concurrency": required(P.whole("Tasks it takes at once.", low=1, high=per_agent)),
            "running": required(P.whole("Tasks it runs now.", low=0, high=per_agent)),
            "paused": P.flag("Takes no new task (the node drains or the agent is held)."),
        },
        max_items=limits.NODE_AGENTS_MAX,
        unique_by="alias",
    )
    slots = limits.NODE_SLOTS_MAX
    return [
        Tool(
            name="report_node",
            title="Report a node (heartbeat)",
            description=(
                "A node (commhub-agent node) reports itself and the agents it hosts, about every minute; each "
                "agent still calls report_status with its node_id. Left out: unchanged. Needs a network token."
            ),
            params={
                "node_id": P.identifier("Stable machine id (report_status node_id).", required=True),
                "node_name": P.identifier("Display name."),
                "host": P.identifier("Host name."),
                "os": P.identifier("Operating system."),
                "agent_version": P.identifier("commhub-agent's version."),
                "runtimes": runtimes,
                "agents": agents,
                "slots_total": P.whole("Tasks it may run at once.", low=0, high=slots),
                "slots_used": P.whole("Tasks it runs now.", low=0, high=slots),
                "network_id": A.NETWORK_ID,
            },
            service=node_report,
            render=_node_id,
            guard=require_network_token_for_node,
            output=result(node_id={"type": "string"}),
            idempotent=True,
        ),
        Tool(
            name="list_nodes",
            title="List nodes",
            description=(
                "The machines agents run on: host, OS, runtimes, agents, slots used and free, last seen "
                "(online: seen within the offline threshold)."
            ),
            params={"network_id": A.NETWORK_ID},
            service=node_list,
            render=_nodes,
            output=result(nodes=rows("By network, then name.")),
            read_only=True,
        ),
        Tool(
            name="node_command",
            title="Send a node a command",
            description=(
                "Owners and admins: pause or resume intake (an agent, or the node), stop a running task's "
                "process, restart_session (an agent's next task starts fresh), drain the node, "
                "set_concurrency (an agent), tail (a run's last lines, secrets redacted). The node answers "
                f"within {settings.COMMHUB_NODE_COMMAND_ACK_SECONDS} s or the command expires; node_commands "
                "shows its state."
            ),
            params={
                "node_id": P.identifier("The node (list_nodes).", required=True),
                "kind": P.choice("What to do.", CommandKind.values, required=True),
                "alias": P.identifier("The agent it is for; left out: the node (pause, resume, stop, tail)."),
                "task_id": P.identifier("The running task (stop, tail)."),
                "value": P.whole(
                    f"set_concurrency: tasks at once; tail: lines (default {limits.TAIL_LINES_DEFAULT}).",
                    low=1,
                    high=max(limits.CONCURRENT_MAX, limits.TAIL_LINES_MAX),
                ),
                "network_id": A.NETWORK_ID,
            },
            service=node_command_send,
            render=_command,
            output=result(command={"type": "object"}),
            destructive=True,
        ),
        Tool(
            name="node_command_ack",
            title="Acknowledge a node command",
            description=(
                "A node answers a command it was sent (node_command): ok, or not with its reason; tail's "
                "lines with it. Needs the node's network token."
            ),
            params={
                "command_id": P.identifier("The command (its node_command event).", required=True),
                "ok": required(P.flag("Done (true) or failed (false, with reason).")),
                "reason": P.text("Why it failed."),
                "lines": P.text_list(
                    "tail: the run's last lines, redacted.",
                    max_items=limits.TAIL_LINES_MAX,
                    max_len=limits.TAIL_LINE_MAX,
                ),
                "network_id": A.NETWORK_ID,
            },
            service=node_command_ack,
            render=_command,
            guard=require_network_token_for_ack,
            output=result(command={"type": "object"}),
            idempotent=True,
        ),
        Tool(
            name="node_commands",
            title="List node commands",
            description="Commands sent to nodes, newest first, with their state: sent, done, failed (why), expired.",
            params={
                "node_id": P.identifier("Only this node's."),
                "command_id": P.identifier("Only this one."),
                "limit": A.limit("commands", limits.COMMANDS_PAGE_MAX, 50),
                "network_id": A.NETWORK_ID,
            },
            service=node_command_list,
            render=_commands,
            output=result(commands=rows("Newest first.")),
            read_only=True,
        ),
    ]
