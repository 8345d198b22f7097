from django.apps import AppConfig


class HubMcpConfig(AppConfig):
    name = "hub_mcp"
    verbose_name = "MCP endpoint"
