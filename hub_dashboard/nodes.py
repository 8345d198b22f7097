"""The Nodes page: every machine of the network with its agents, slots, usage today and the commands
sent to it; owners and admins send commands from it (node_command, the same door as MCP and REST)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from hub_agents.models import CommandKind
from hub_core.errors import HubError
from hub_dashboard.budgets import budgets_by_scope
from hub_dashboard.templatetags.hub_format import node_anchor
from hub_dashboard.views import Desk
from hub_dashboard.wording import refusal_for_operator
from hub_fleet.selectors import nodes_overview
from hub_tools.tools import invoke

# The buttons each agent row and each node offer: (kind, label). stop and tail act on a running task.
AGENT_COMMANDS = (("pause", "Pause"), ("resume", "Resume"), ("restart_session", "Restart session"))
NODE_COMMANDS = (("pause", "Pause node"), ("resume", "Resume node"), ("drain", "Drain"))


@login_required
def nodes_page(request: HttpRequest) -> HttpResponse:
    desk = Desk(request)
    if desk.network_id is None:
        return render(request, "dashboard/no_network.html", desk.context())
    network_budgets, agent_budgets = budgets_by_scope(desk.actor, desk.network_id)
    if request.GET.get("fragment") == "budgets":  # usage reported or a budget moved: the strip alone
        return render(request, "dashboard/_budget_strip.html", desk.context(network_budgets=network_budgets))
    nodes = nodes_overview(actor=desk.actor, network_id=desk.network_id)
    for node in nodes:  # each agent's own budget on its row
        for agent in node["agents"]:
            agent["budgets"] = agent_budgets.get(agent["alias"], [])
    context = desk.context(
        nodes=nodes,
        network_budgets=network_budgets,
        can_command=desk.can_audit,
        agent_commands=AGENT_COMMANDS,
        node_commands=NODE_COMMANDS,
        section="nodes",
        live=True,
    )
    if request.GET.get("fragment") == "nodes":  # a node reported or a command moved: the list alone
        return render(request, "dashboard/_node_list.html", context)
    return render(request, "dashboard/nodes.html", context)


@login_required
@require_POST
def node_command_action(request: HttpRequest, node_id: str) -> HttpResponse:
    desk = Desk(request)
    kind = request.POST.get("kind", "")
    arguments = {
        "network_id": desk.network_id,
        "node_id": node_id,
        "kind": kind,
        "alias": request.POST.get("alias") or None,
        "task_id": request.POST.get("task_id") or None,
        "value": request.POST.get("value") or None,
    }
    try:
        command = invoke("node_command", desk.actor, {k: v for k, v in arguments.items() if v is not None})
    except HubError as refusal:
        messages.error(request, refusal_for_operator(refusal).text)
    else:
        label = CommandKind(command.kind).label if command.kind in CommandKind.values else command.kind
        messages.success(request, f"Sent {command.kind} to {node_id} ({label}); the node answers below.")
    return redirect(reverse("dashboard:nodes") + f"#{node_anchor(node_id)}")
