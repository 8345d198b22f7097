from __future__ import annotations

from django.apps import AppConfig


class HubApprovalsConfig(AppConfig):
    name = "hub_approvals"
    verbose_name = "Approvals"
