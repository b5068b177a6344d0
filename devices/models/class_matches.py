"""Which DeviceClasses each device satisfies, as the allocator's CEL evaluates their selectors."""

from __future__ import annotations

from django.db import models

from devices.models.devices import Device

__all__ = ["DeviceClassMatch"]


class DeviceClassMatch(models.Model):
    """One device satisfying every selector of one DeviceClass.

    Derived data, refreshed by ``devices.tasks.refresh_device_classes`` after slices or classes
    change. The class is referenced by name so the rows survive a class being reinstalled.
    """

    device = models.ForeignKey(Device, on_delete=models.CASCADE, related_name="class_matches")
    device_class_name = models.CharField(max_length=253)

    class Meta:
        ordering = ["device_class_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["device_class_name", "device"], name="one_match_per_device_and_class"
            )
        ]

    def __str__(self) -> str:
        return f"{self.device} ∈ {self.device_class_name}"
