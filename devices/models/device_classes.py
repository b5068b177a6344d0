"""DeviceClass (cluster scoped): selectors and config that requests refer to by name."""

from __future__ import annotations

from django.db import models
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.urls import reverse

from devices.models.class_matches import DeviceClassMatch
from devices.models.devices import DeviceState
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

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "device classes"

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("deviceclass-detail", kwargs={"name": self.name})

    @property
    def cel_expressions(self) -> list[str]:
        """The class's CEL selector expressions (non-CEL selectors left out)."""
        return [e for e in selector_expressions(self.selectors) if e is not None]
