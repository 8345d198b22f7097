"""The registry's own table: the answers of calls made with an idempotency_key (hub_tools.replays).
Approvals' tables, once here, are hub_approvals' models now (their tables keep their names).
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

# How long a replay key is kept: an agent's node replays its journal within this (the sweep prunes older).
REPLAY_KEY_DAYS = 7


class ReplayKey(models.Model):
    """A call made with an idempotency_key (report_completion, send_reply, report_status, ack_inbox)
    and its answer: a later call with the same key, from the same caller in the same network, gets
    this answer again and writes nothing (hub_tools.replays). The unique constraint decides which of
    two concurrent first calls records."""

    network = models.CharField(max_length=64, help_text="The call's network; empty when it named none.")
    caller = models.CharField(max_length=100, help_text="Actor.key: the token (or user) that called.")
    key = models.CharField(max_length=200)
    tool = models.CharField(max_length=64)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the tool and its other arguments.")
    # Null only inside the first call's transaction: the row is claimed first, answered at its end.
    answer = models.JSONField(null=True, help_text="The result object the first call answered.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["network", "caller", "key"], name="replaykey_unique"),
        ]
        indexes = [models.Index(fields=["created_at"], name="replaykey_age")]

    def __str__(self) -> str:
        return f"{self.tool} {self.key} by {self.caller}"
