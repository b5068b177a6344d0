"""Namespace (core/v1)."""

from __future__ import annotations

from django.db import models

from devices.models.mirror import MirroredObject

__all__ = ["Namespace"]


class Namespace(MirroredObject):
    phase = models.CharField(max_length=20, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
