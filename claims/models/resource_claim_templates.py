"""ResourceClaimTemplate (namespaced): the spec of claims generated for each pod."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import models

from devices.models.mirror import MirroredObject

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

__all__ = ["ResourceClaimTemplate"]


class ResourceClaimTemplateQuerySet(models.QuerySet["ResourceClaimTemplate"]):
    def visible_to(self, user: AbstractBaseUser | AnonymousUser) -> ResourceClaimTemplateQuerySet:
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self.all()
        from portal.models import TenantNamespace

        namespaces = TenantNamespace.objects.filter(tenant__memberships__user=user)
        return self.filter(namespace__in=namespaces.values("name"))


class ResourceClaimTemplate(MirroredObject):
    namespace = models.CharField(max_length=63, db_index=True)

    objects = ResourceClaimTemplateQuerySet.as_manager()

    class Meta:
        ordering = ["namespace", "name"]
        constraints = [
            models.UniqueConstraint(fields=["namespace", "name"], name="one_template_per_name")
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"
