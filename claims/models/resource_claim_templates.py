"""ResourceClaimTemplate (namespaced): the spec of claims generated for each pod."""

from __future__ import annotations

from django.db import models

from devices.models.mirror import MirroredObject, NamespacedQuerySet

__all__ = ["ResourceClaimTemplate"]


class ResourceClaimTemplate(MirroredObject):
    namespace = models.CharField(max_length=63, db_index=True)

    objects = NamespacedQuerySet.as_manager()

    class Meta:
        ordering = ["namespace", "name"]
        constraints = [
            models.UniqueConstraint(fields=["namespace", "name"], name="one_template_per_name")
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"
