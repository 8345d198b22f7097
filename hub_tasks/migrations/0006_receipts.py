"""Delivery receipts: when an inbox message first reached its agent and how; when a task was first read.

Nullable columns without a default, so each AddField is a plain ADD COLUMN on both databases: no
rebuild of hub_tasks_task on SQLite, which would drop the triggers of migrations 0003 and 0004.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("hub_tasks", "0005_dependencies_and_schedule"),
    ]

    operations = [
        migrations.AddField(
            model_name="inboxmessage",
            name="delivered_to_agent_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="inboxmessage",
            name="delivered_via",
            field=models.CharField(
                blank=True, choices=[("get_inbox", "Get Inbox"), ("sse", "Sse")], max_length=16, null=True
            ),
        ),
        migrations.AddField(
            model_name="task",
            name="first_read_at",
            field=models.DateTimeField(blank=True, help_text="When its agent first read it.", null=True),
        ),
    ]
