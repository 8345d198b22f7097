from django.apps import AppConfig


class HubAgentsConfig(AppConfig):
    name = "hub_agents"
    verbose_name = "Agents and networks"

    def ready(self) -> None:
        # Connects the signals that renew the access generation on every change of access.
        from hub_agents import actor_cache  # noqa: F401
