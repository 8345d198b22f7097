from django.apps import AppConfig


class HubTasksConfig(AppConfig):
    name = "hub_tasks"
    verbose_name = "Tasks and inboxes"
