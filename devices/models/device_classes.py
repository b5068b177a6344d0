"""DeviceClass (cluster scoped): selectors and config that requests refer to by name."""

from __future__ import annotations

from django.db import models
from django.urls import reverse

from devices.models.mirror import MirroredObject

__all__ = ["DeviceClass"]


class DeviceClass(MirroredObject):
    selectors = models.JSONField(default=list, blank=True)  # spec.selectors
    config = models.JSONField(default=list, blank=True)  # spec.config
    extended_resource_name = models.CharField(max_length=253, blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "device classes"

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("deviceclass-detail", kwargs={"name": self.name})

    @property
    def cel_expressions(self) -> list[str]:
        return [
            selector["cel"]["expression"]
            for selector in self.selectors
            if isinstance(selector, dict) and isinstance(selector.get("cel"), dict)
        ]
