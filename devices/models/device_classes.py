"""DeviceClass (cluster scoped): selectors and config that requests refer to by name."""

from __future__ import annotations

from django.db import models
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.urls import reverse

from devices.models.class_matches import DeviceClassMatch
from devices.models.devices import Device, DeviceState
from devices.models.mirror import MirroredObject
from dra.model import selector_expressions

__all__ = ["DeviceClass", "DeviceClassQuerySet"]


class DeviceClassQuerySet(models.QuerySet["DeviceClass"]):
    def with_device_counts(self) -> DeviceClassQuerySet:
        """Annotates ``matching_device_count`` (devices every CEL selector of the class
        accepts, ``DeviceClassMatch`` rows) and ``free_device_count`` (of those, the ones whose
        ``state`` is free)."""
        matches = (
            DeviceClassMatch.objects.filter(device_class_name=OuterRef("name"))
            .order_by()
            .values("device_class_name")
        )
        return self.annotate(
            matching_device_count=Coalesce(
                Subquery(matches.annotate(n=Count("pk")).values("n")), 0
            ),
            free_device_count=Coalesce(
                Subquery(
                    matches.annotate(
                        n=Count("pk", filter=Q(device__state=DeviceState.FREE))
                    ).values("n")
                ),
                0,
            ),
        )


class DeviceClass(MirroredObject):
    selectors = models.JSONField(default=list, blank=True)  # spec.selectors
    config = models.JSONField(default=list, blank=True)  # spec.config
    extended_resource_name = models.CharField(max_length=253, blank=True)

    objects = DeviceClassQuerySet.as_manager()

    # Set on the rows of ``DeviceClass.objects.with_device_counts()`` only.
    matching_device_count: int
    free_device_count: int

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "device classes"

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("deviceclass-detail", kwargs={"name": self.name})

    @property
    def free_devices_share_counters(self) -> bool:
        """Whether two free devices of the class consume the same shared counter set (MIG
        partitions of one GPU): each is free on its own, but they may not all fit together
        (the fragmentation advisor says how many do). Whole GPUs, each with counters of its
        own, do not. One query."""
        seen: set[tuple[str, str, object]] = set()
        rows = (
            Device.objects.in_state(DeviceState.FREE)
            .filter(class_matches__device_class_name=self.name)
            .exclude(consumes_counters=[])
            .values_list("driver", "pool_name", "consumes_counters")
        )
        for driver, pool, consumed in rows.iterator():
            sets = {
                item.get("counterSet")
                for item in (consumed if isinstance(consumed, list) else [])
                if isinstance(item, dict)
            }
            for name in sets:
                if (driver, pool, name) in seen:
                    return True
                seen.add((driver, pool, name))
        return False

    @property
    def cel_expressions(self) -> list[str]:
        """The class's CEL selector expressions (non-CEL selectors left out)."""
        return [e for e in selector_expressions(self.selectors) if e is not None]
