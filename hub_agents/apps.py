from django.apps import AppConfig


class HubAgentsConfig(AppConfig):
    name = "hub_agents"
    verbose_name = "Agents and networks"
