"""ResourceSlice (cluster scoped): one driver's devices in one pool, and shared counters."""

from __future__ import annotations

from django.db import models

from devices.models.mirror import MirroredObject

__all__ = ["ResourceSlice", "SharedCounterSet"]


class ResourceSlice(MirroredObject):
    class NodeSelection(models.TextChoices):
        NODE_NAME = "nodeName", "nodeName"
        NODE_SELECTOR = "nodeSelector", "nodeSelector"
        ALL_NODES = "allNodes", "allNodes"
        PER_DEVICE = "perDeviceNodeSelection", "perDeviceNodeSelection"
        NONE = "", "none"

    driver = models.CharField(max_length=63, db_index=True)
    pool_name = models.CharField(max_length=253)
    pool_generation = models.BigIntegerField(default=0)
    resource_slice_count = models.PositiveIntegerField(default=1)
    node_selection = models.CharField(max_length=30, choices=NodeSelection.choices, blank=True)
    node_name = models.CharField(max_length=253, blank=True, db_index=True)
    node_selector = models.JSONField(null=True, blank=True)
    device_count = models.PositiveIntegerField(default=0)
    # ``mirror.mapping.spec_digest``: equal digests, equal spec (devices rows left alone).
    spec_digest = models.CharField(max_length=32, blank=True, default="")

    class Meta:
        ordering = ["driver", "pool_name", "name"]
        indexes = [models.Index(fields=["driver", "pool_name"])]

    def __str__(self) -> str:
        return self.name


class SharedCounterSet(models.Model):
    """A ``spec.sharedCounters`` entry. In 1.34 slices it sits beside its devices; from 1.35 on
    it lives in a counter-only slice and serves the whole pool."""

    resource_slice = models.ForeignKey(
        ResourceSlice, on_delete=models.CASCADE, related_name="counter_sets"
    )
    driver = models.CharField(max_length=63)
    pool_name = models.CharField(max_length=253)
    name = models.CharField(max_length=63)
    counters = models.JSONField(default=dict)  # {counter: {"value": quantity}}

    class Meta:
        ordering = ["driver", "pool_name", "name"]
        indexes = [models.Index(fields=["driver", "pool_name", "name"])]

    def __str__(self) -> str:
        return f"{self.pool_name}/{self.name}"
