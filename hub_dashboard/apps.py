from django.apps import AppConfig


class HubDashboardConfig(AppConfig):
    name = "hub_dashboard"
    verbose_name = "Operator dashboard"
