"""REST endpoints for agent sessions and their skills, and the nodes they run on, each running one tool
(the contract's or the hub's own)."""

from __future__ import annotations

from hub_api.endpoints import Operation, route

urlpatterns = [
    route("sessions", Operation("get", "get_all_status"), tag="sessions"),
    route(
        "sessions/report",
        Operation("post", "report_status"),
        Operation("get", "get_session_status", fixed=(("alias", "report"),)),
        tag="sessions",
    ),
    route("agents", Operation("get", "find_agents"), tag="sessions"),
    route("sessions/<str:alias>", Operation("get", "get_session_status"), tag="sessions"),
    route("sessions/<str:alias>/inbox", Operation("get", "get_inbox"), tag="inbox"),
    route("sessions/<str:alias>/inbox/<str:message_id>/ack", Operation("post", "ack_inbox"), tag="inbox"),
    # Beyond the contract: the machines agents run on (issue 25).
    route("nodes", Operation("get", "list_nodes"), tag="nodes"),
    route("nodes/report", Operation("post", "report_node"), tag="nodes"),
    # Commands to nodes (issue 28): sent by owners and admins, answered by the node.
    route("nodes/commands", Operation("get", "node_commands"), Operation("post", "node_command"), tag="nodes"),
    route("nodes/commands/<str:command_id>/ack", Operation("post", "node_command_ack"), tag="nodes"),
]
