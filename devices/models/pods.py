"""Pod (core/v1): the consumers named in claims' ``reservedFor``."""

from __future__ import annotations

from django.db import models

from devices.models.mirror import MirroredObject

__all__ = ["Pod"]


class Pod(MirroredObject):
    namespace = models.CharField(max_length=63, db_index=True)
    node_name = models.CharField(max_length=253, blank=True, db_index=True)
    phase = models.CharField(max_length=20, blank=True)

    class Meta:
        ordering = ["namespace", "name"]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"
