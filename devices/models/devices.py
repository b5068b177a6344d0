"""Device: one entry of a ResourceSlice's ``spec.devices``, with columns to filter and join on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import models
from django.db.models import Exists, OuterRef, Q
from django.urls import reverse

from devices.models.resource_slices import ResourceSlice

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

__all__ = ["Device", "DeviceQuerySet", "DeviceState"]


class DeviceState(models.TextChoices):
    FREE = "free", "Free"
    ALLOCATED = "allocated", "Allocated"
    SHARED = "shared", "Shared"
    BLOCKED = "blocked", "Blocked"
    TAINTED = "tainted", "Tainted"


class DeviceQuerySet(models.QuerySet["Device"]):
    def visible_to(self, user: AbstractBaseUser | AnonymousUser) -> DeviceQuerySet:
        """Inventory is visible to every signed-in user; who holds a device is gated per claim."""
        return self.all() if user.is_authenticated else self.none()

    def _allocations(self, *, shared: bool | None = None) -> Exists:
        from claims.models import AllocatedDevice

        results = AllocatedDevice.objects.filter(
            driver=OuterRef("driver"),
            pool=OuterRef("pool_name"),
            device_name=OuterRef("name"),
            admin_access=False,
        )
        if shared is True:
            results = results.exclude(share_id="")
        elif shared is False:
            results = results.filter(share_id="")
        return Exists(results)

    def allocated(self) -> DeviceQuerySet:
        """Devices held by a claim (dedicated or shared); admin-access results do not count."""
        return self.filter(self._allocations())

    def shared(self) -> DeviceQuerySet:
        """Devices held by a claim that is reserved for more than one consumer, or by shares."""
        from claims.models import AllocatedDevice

        multi = AllocatedDevice.objects.filter(
            driver=OuterRef("driver"),
            pool=OuterRef("pool_name"),
            device_name=OuterRef("name"),
            admin_access=False,
            claim__consumer_count__gt=1,
        )
        return self.filter(self._allocations(shared=True) | Exists(multi))

    def free(self) -> DeviceQuerySet:
        return self.filter(state=DeviceState.FREE)

    def held(self) -> DeviceQuerySet:
        """Devices whose badge says a claim holds them (allocated or shared, not tainted):
        the stored ``state``, so counts by state add up to the total."""
        return self.filter(state__in=[DeviceState.ALLOCATED, DeviceState.SHARED])

    def tainted(self) -> DeviceQuerySet:
        return self.filter(is_tainted=True)

    def in_state(self, state: str) -> DeviceQuerySet:
        """Devices whose badge shows ``state`` (tainted, then shared, then allocated, then
        free): a tainted device that a claim still holds is listed as tainted."""
        return self.filter(state=DeviceState(state))

    def on_node(self, node_name: str) -> DeviceQuerySet:
        return self.filter(Q(node_name=node_name))


class Device(models.Model):
    resource_slice = models.ForeignKey(
        ResourceSlice, on_delete=models.CASCADE, related_name="devices"
    )
    driver = models.CharField(max_length=63)
    pool_name = models.CharField(max_length=253)
    name = models.CharField(max_length=63)
    # The node the device is reachable from: the slice's nodeName or the device's own; blank
    # for devices offered to many nodes (nodeSelector / allNodes).
    node_name = models.CharField(max_length=253, blank=True, db_index=True)
    attributes = models.JSONField(default=dict, blank=True)
    capacity = models.JSONField(default=dict, blank=True)
    consumes_counters = models.JSONField(default=list, blank=True)
    taints = models.JSONField(default=list, blank=True)
    is_tainted = models.BooleanField(default=False)
    # Kept by the mirror (mirror.states) from taints and the claims' allocation results.
    state = models.CharField(
        max_length=20,
        choices=DeviceState.choices,
        default=DeviceState.FREE,
        db_default=DeviceState.FREE,
        db_index=True,
    )
    # Why the device is in its state, in words ("held by team-a-dev/train-0", "counters used by
    # gpu-0-mig-1g.5gb-0, ...", "2 of 8 shares' capacity used"); blank when free.
    state_reason = models.CharField(max_length=500, blank=True, default="", db_default="")
    allow_multiple_allocations = models.BooleanField(default=False)
    # Derived from well-known attributes for filtering and display.
    device_type = models.CharField(max_length=63, blank=True)  # gpu, mig, channel, ...
    model_name = models.CharField(max_length=200, blank=True, db_index=True)
    uuid = models.CharField(max_length=100, blank=True, db_index=True)
    parent_uuid = models.CharField(max_length=100, blank=True)
    pci_bus_id = models.CharField(max_length=32, blank=True)
    pcie_root = models.CharField(max_length=64, blank=True)
    memory_bytes = models.BigIntegerField(null=True, blank=True)
    raw = models.JSONField()

    objects = DeviceQuerySet.as_manager()

    class Meta:
        ordering = ["node_name", "driver", "pool_name", "name"]
        constraints = [
            # Upserts key on it; a slice listing a name twice is flagged and keeps the first.
            models.UniqueConstraint(fields=["resource_slice", "name"], name="one_device_per_slice")
        ]
        indexes = [
            # The device list's order: a page is an index range scan, not a sort of all rows.
            models.Index(fields=["node_name", "driver", "pool_name", "name"]),
            models.Index(fields=["driver", "pool_name", "name"]),
            models.Index(fields=["model_name", "node_name"]),
        ]

    def __str__(self) -> str:
        return f"{self.pool_name}/{self.name}"

    def get_absolute_url(self) -> str:
        return reverse("device-detail", kwargs={"pk": self.pk})
