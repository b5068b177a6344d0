"""An append-only log of inventory changes, so that warm indexes in other processes follow the
mirror incrementally instead of reloading it (the allocation index in ``claims.capacity.index``)."""

from __future__ import annotations

from datetime import timedelta

from django.db import models
from django.utils import timezone

__all__ = ["InventoryChange"]

# Rows older than this are pruned; an index that fell further behind reloads whole.
KEEP_FOR = timedelta(minutes=30)


class InventoryChangeQuerySet(models.QuerySet["InventoryChange"]):
    def after(self, cursor: int) -> InventoryChangeQuerySet:
        return self.filter(pk__gt=cursor).order_by("pk")

    def prune(self) -> int:
        deleted, _ = self.filter(created_at__lt=timezone.now() - KEEP_FOR).delete()
        return deleted


class InventoryChange(models.Model):
    """One pool whose slices or allocations changed, or a change to all device classes or
    nodes. Written by the mirror in the transaction that makes the change."""

    class Scope(models.TextChoices):
        POOL = "pool", "Pool"
        DEVICE_CLASSES = "deviceclasses", "Device classes"
        NODES = "nodes", "Nodes"

    id = models.BigAutoField(primary_key=True)
    scope = models.CharField(max_length=20, choices=Scope.choices)
    driver = models.CharField(max_length=63, blank=True)
    pool_name = models.CharField(max_length=253, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = InventoryChangeQuerySet.as_manager()

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.scope} {self.driver}/{self.pool_name}".rstrip("/ ")
