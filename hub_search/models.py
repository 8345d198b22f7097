"""The search index: one row per searchable thing (a task, an inbox message, a completion, a channel post),
written by hub_search.sources when the thing is written. The full-text index over `terms` is not a
model field, because it is each engine's own: on PostgreSQL a generated `tsv` column with a GIN
index, on SQLite an FTS5 table kept in step by triggers on this table (migration 0001 makes both).

A migration that makes SQLite rebuild this table (most column changes do) drops those triggers:
call `hub_search.engines.sqlite_triggers_sql()` again at its end, as 0001 does.
"""

from __future__ import annotations

from django.db import models

from hub_agents.models import Network
from hub_channels.models import ChannelPost


class SearchEntry(models.Model):
    id = models.BigAutoField(primary_key=True)
    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16)
    object_id = models.CharField(max_length=64, help_text="task_id, message id, completion id, ...")
    alias = models.CharField(max_length=200, help_text="Whom it concerns: the task's agent, the message's recipient, …")
    created_at = models.DateTimeField()
    title = models.CharField(max_length=200)
    text = models.TextField(help_text="What the snippet is cut from.")
    terms = models.TextField(help_text="The words of text as hub_search.query.terms() makes them: what is indexed.")
    # A channel post's entry: its channel (the alias filter finds the posts of the channels an alias
    # is in), whether only the channel's members read it (channel_read's rule: every type but
    # broadcast), and the post itself, whose deletion (retention) takes the entry with it.
    channel_id = models.CharField(max_length=40, null=True, blank=True)
    members_only = models.BooleanField(default=False)
    post = models.ForeignKey(
        ChannelPost, null=True, blank=True, on_delete=models.CASCADE, related_name="+", db_index=False
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "object_id"], name="searchentry_one_per_object")]
        # The newest matches first: a query that matches much walks this (hub_search.engines).
        indexes = [
            models.Index(fields=["network", "-created_at"], name="searchentry_network_time"),
            # Retention's delete of posts finds their entries by this (only posts have one).
            models.Index(fields=["post"], name="searchentry_post", condition=models.Q(post__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.object_id}"
