"""Whether a tenant's usage of a device class is above the "quota high" line."""

from __future__ import annotations

from django.db import models

from portal.models import Tenant

__all__ = ["QuotaAlarm"]


class QuotaAlarm(models.Model):
    """Raised when usage crosses the line (one notice per crossing), cleared when it falls
    back below it, which re-arms the next notice. ``crossings`` numbers them: it is part of
    each crossing's dedupe key."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="quota_alarms")
    device_class_name = models.CharField("device class", max_length=253)
    is_raised = models.BooleanField(default=False)
    crossings = models.PositiveIntegerField(default=0)
    changed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant", "device_class_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "device_class_name"], name="one_quota_alarm_per_class"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant} {self.device_class_name}: {'raised' if self.is_raised else 'clear'}"
