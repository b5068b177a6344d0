"""Node (core/v1): labels and the extended resources of legacy device plugins."""

from __future__ import annotations

from django.db import models
from django.urls import reverse

from devices.models.mirror import MirroredObject

__all__ = ["Node"]


class Node(MirroredObject):
    is_ready = models.BooleanField(default=False)
    is_schedulable = models.BooleanField(default=True)
    # Extended resources advertised by device plugins, e.g. {"nvidia.com/gpu": "8"}, so that
    # GPUs not managed through DRA are shown beside the DRA ones.
    extended_resources = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("node-detail", kwargs={"name": self.name})
