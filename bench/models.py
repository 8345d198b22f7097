"""The reference point's table: what a minimal one-INSERT Django view writes."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class Probe(models.Model):
    label = models.CharField(max_length=100)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"probe {self.pk}"
