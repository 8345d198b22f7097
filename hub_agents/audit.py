"""The audit log's one writer, called by the services whose actions it records."""

from __future__ import annotations

from typing import Any

from hub_agents.models import AuditEntry, Network

SYSTEM = "system"  # actions nobody asked for by name: start-up defaults, a superuser's first network
CLI = "cli:manage.py"  # what an operator does at the shell (create_network, create_token)


def audit_record(*, network_id: str, action: str, actor: str, target: str, **detail: Any) -> AuditEntry:
    """One audit row, in the caller's transaction: it commits, or rolls back, with the action."""
    name = Network.objects.filter(pk=network_id).values_list("name", flat=True).first() or ""
    return AuditEntry.objects.create(
        network_id=network_id, network_name=name, action=action, actor=actor[:300], target=target[:500], detail=detail
    )
