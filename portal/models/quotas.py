"""Per-tenant, per-device-class limits. A blank limit means unlimited."""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from django.db import models

from portal.inventory import device_classes
from portal.models.tenants import Tenant
from toolkit.querysets import VisibleQuerySet

if TYPE_CHECKING:
    from django.contrib.auth.models import User

__all__ = ["Quota", "QuotaQuerySet"]


class QuotaQuerySet(VisibleQuerySet["Quota"]):
    def visible_to_member(self, user: User) -> Self:
        """Quotas of the tenants the user may see."""
        return self.filter(tenant__in=Tenant.objects.visible_to(user))

    def with_cluster_presence(self) -> QuotaQuerySet:
        """Annotates ``device_class_in_cluster``: whether the mirror holds a DeviceClass of that
        name (``portal.inventory``: ``portal`` may not import ``devices``)."""
        return self.annotate(
            device_class_in_cluster=models.Exists(
                device_classes().filter(name=models.OuterRef("device_class_name"))
            )
        )


class Quota(models.Model):
    """How much of one DeviceClass a tenant may hold at once.

    The device class is referenced by name, not by a foreign key to the mirror: a quota may be
    set before a driver publishes its class, and survives the class being reinstalled.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="quotas")
    device_class_name = models.CharField(
        "device class",
        max_length=253,
        help_text="Name of the DeviceClass, e.g. gpu.nvidia.com.",
    )
    max_devices = models.PositiveIntegerField(
        null=True, blank=True, help_text="Devices held at once. Blank: unlimited."
    )
    max_device_memory = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="Sum of the devices' memory capacity, in bytes. Blank: unlimited.",
    )
    max_claims = models.PositiveIntegerField(
        null=True, blank=True, help_text="ResourceClaims held at once. Blank: unlimited."
    )
    max_lease = models.DurationField(
        null=True, blank=True, help_text="Longest lease a claim may ask for. Blank: unlimited."
    )
    # Approval policy for this tenant and class: requests beyond a threshold, or over the
    # quota when ``approve_over_quota``, wait for a tenant admin or portal admin.
    approve_above_devices = models.PositiveIntegerField(
        null=True, blank=True, help_text="Requests for more devices than this need approval."
    )
    approve_above_memory = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="Requests for more device memory than this (bytes) need approval.",
    )
    approve_above_lease = models.DurationField(
        null=True, blank=True, help_text="Requests for a longer lease than this need approval."
    )
    approve_over_quota = models.BooleanField(
        default=False,
        help_text="Requests over the quota wait for approval instead of being refused.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    objects = QuotaQuerySet.as_manager()

    class Meta:
        ordering = ["tenant__name", "device_class_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "device_class_name"], name="one_quota_per_tenant_and_class"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant}: {self.device_class_name}"
