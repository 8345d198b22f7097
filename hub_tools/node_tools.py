"""The node tools' specs (issue 25), gathered by hub_tools.tools after the hub's other own tools.

A node is one machine's supervisor, `commhub-agent node`, hosting the agents its config declares.
report_node is its own heartbeat (host, OS, runtimes, the agents it hosts, its slots); each agent
still sends its own report_status, with the node's node_id. list_nodes is what the fleet page's
node strip shows, for REST and MCP alike.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hub_agents import limits
from hub_agents.selectors import node_list
from hub_agents.services import node_report, require_network_token_for_node
from hub_tools import args as A
from hub_tools import params as P
from hub_tools.schema import result, rows
from hub_tools.tool import Tool


def _node_id(node_id: str) -> dict[str, Any]:
    return {"node_id": node_id}


def _nodes(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {"nodes": found}


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
    ]
