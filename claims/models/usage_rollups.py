"""UsageRollup: utilisation of what claims held, per claim, namespace and tenant, per bucket.

Computed from the devices' rollups (``devices.DeviceRollup``) and who held each device when
(``AllocationRecord``): a device counts for a claim while the claim held it, once however many
pods share the claim, and never for an admin-access observer. Copies what a page needs (names,
tenant) so that it still reads after the claim is gone.
"""

from __future__ import annotations

import datetime

from django.db import models

from devices.models import Resolution
from portal.models import Tenant

__all__ = ["UsageRollup", "UsageRollupQuerySet"]


class UsageRollupQuerySet(models.QuerySet["UsageRollup"]):
    def series(
        self, scope: str, key: str, *, since: datetime.datetime, resolution: Resolution | str
    ) -> UsageRollupQuerySet:
        """Buckets of one claim (key: uid), namespace (name) or tenant (slug), oldest first."""
        return self.filter(
            scope=UsageRollup.Scope(scope),
            key=key,
            resolution=Resolution(resolution),
            bucket_start__gte=since,
        ).order_by("bucket_start")


class UsageRollup(models.Model):
    class Scope(models.TextChoices):
        CLAIM = "claim", "Claim"
        NAMESPACE = "namespace", "Namespace"
        TENANT = "tenant", "Tenant"

    scope = models.CharField(max_length=10, choices=Scope.choices)
    # claim: the claim's uid; namespace: its name; tenant: its slug.
    key = models.CharField(max_length=253)
    namespace = models.CharField(max_length=63, blank=True)
    claim_name = models.CharField(max_length=253, blank=True)
    tenant = models.ForeignKey(
        Tenant, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    resolution = models.CharField(max_length=2, choices=Resolution.choices)
    bucket_start = models.DateTimeField()
    # Device-seconds observed in the bucket (a device held for the whole 5 minutes: 300).
    device_seconds = models.FloatField(default=0)
    gpu_util_avg = models.FloatField(null=True, blank=True)  # weighted by device-seconds
    fb_used_mib_avg = models.FloatField(null=True, blank=True)
    power_w_avg = models.FloatField(null=True, blank=True)
    is_simulated = models.BooleanField(default=False)

    objects = UsageRollupQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["scope", "key", "resolution", "bucket_start"],
                name="one_usage_rollup_per_bucket",
            )
        ]
        indexes = [models.Index(fields=["resolution", "bucket_start"])]

    def __str__(self) -> str:
        return f"{self.scope} {self.key} {self.resolution} from {self.bucket_start:%Y-%m-%d %H:%M}"
