"""ResourceClaim (namespaced), its allocated devices and its consumers as rows."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from django.db import models
from django.db.models import Count, Q
from django.urls import reverse

from devices.models import Device
from devices.models.mirror import MirroredObject, NamespacedQuerySet
from portal.models import Tenant

__all__ = [
    "SIMULATED_SCHEDULER_ANNOTATION",
    "AllocatedDevice",
    "ClaimConsumer",
    "ResourceClaim",
    "ResourceClaimQuerySet",
]

# Set by the demo's simulated scheduler (``demo/scheduler.py``) on the claims it allocated.
SIMULATED_SCHEDULER_ANNOTATION = "dra-portal.io/simulated-scheduler"


class ResourceClaimQuerySet(NamespacedQuerySet):
    """``visible_to(user)``: portal admins see every claim, others their tenants' claims."""

    def allocated(self) -> ResourceClaimQuerySet:
        return self.filter(is_allocated=True)

    def pending(self) -> ResourceClaimQuerySet:
        return self.filter(is_allocated=False)

    def idle(self) -> ResourceClaimQuerySet:
        """Claims the idle sweep flagged (``claims.usage.idle``)."""
        return self.filter(idleness__reason__gt="")

    def with_device_counts(self) -> ResourceClaimQuerySet:
        """Annotates ``device_count`` (results that hold their device) and
        ``observed_device_count`` (admin-access results, which observe a device without
        holding it), in the list's own query."""
        return self.annotate(
            device_count=Count(
                "allocated_devices", filter=Q(allocated_devices__admin_access=False)
            ),
            observed_device_count=Count(
                "allocated_devices", filter=Q(allocated_devices__admin_access=True)
            ),
        )

    def devices_held_by_tenant(self) -> dict[int, int]:
        """Tenant id → how many devices these claims hold now: distinct devices, so a device
        shared by two of a tenant's claims counts once, and admin-access results (observers)
        not at all. One query."""
        held = (
            AllocatedDevice.objects.filter(
                claim__in=self.allocated().filter(tenant__isnull=False), admin_access=False
            )
            .order_by()
            .values_list("claim__tenant_id", "driver", "pool", "device_name")
            .distinct()
        )
        return dict(Counter(tenant_id for tenant_id, *_ in held))


class ResourceClaim(MirroredObject):
    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        ALLOCATED = "allocated", "Allocated"
        IN_USE = "in_use", "In use"
        DELETING = "deleting", "Deleting"

    namespace = models.CharField(max_length=63, db_index=True)
    # The tenant owning the namespace, kept by the mirror and by tenant-namespace changes
    # (``claims.signals``); null for namespaces no tenant owns.
    tenant = models.ForeignKey(
        Tenant,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="resource_claims",
    )
    is_allocated = models.BooleanField(default=False)
    is_deleting = models.BooleanField(default=False)
    consumer_count = models.PositiveIntegerField(default=0)
    allocation_node_selector = models.JSONField(null=True, blank=True)
    # Set for claims generated from a ResourceClaimTemplate for a pod.
    pod_claim_name = models.CharField(max_length=253, blank=True)
    owner_pod = models.CharField(max_length=253, blank=True)
    # ``mirror.mapping``: a digest of the allocation results and consumers the rows below
    # hold; an update with the same digest leaves them (and the devices' states) alone.
    children_digest = models.CharField(max_length=32, blank=True, default="")

    objects = ResourceClaimQuerySet.as_manager()

    class Meta:
        ordering = ["namespace", "name"]
        constraints = [
            models.UniqueConstraint(fields=["namespace", "name"], name="one_claim_per_name")
        ]
        indexes = [
            # The quota counts a tenant's claims not allocated yet by what they ask: few of
            # its thousands.
            models.Index(
                fields=["tenant"], condition=Q(is_allocated=False), name="claim_pending_by_tenant"
            )
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    def get_absolute_url(self) -> str:
        return reverse(
            "resourceclaim-detail", kwargs={"namespace": self.namespace, "name": self.name}
        )

    @property
    def spec(self) -> dict:
        return self.raw.get("spec") or {}

    @property
    def status(self) -> dict:
        return self.raw.get("status") or {}

    @property
    def is_allocated_by_simulated_scheduler(self) -> bool:
        """Whether the demo's simulated scheduler, not a real kube-scheduler, allocated it."""
        annotations = (self.raw.get("metadata") or {}).get("annotations") or {}
        return self.is_allocated and annotations.get(SIMULATED_SCHEDULER_ANNOTATION) == "true"

    @property
    def state(self) -> State:
        if self.is_deleting:
            return self.State.DELETING
        if self.consumer_count:
            return self.State.IN_USE
        return self.State.ALLOCATED if self.is_allocated else self.State.PENDING


DeviceKey = tuple[str, str, str]  # (driver, pool, device)
Holder = tuple[str, str, str, str, str]  # (driver, pool, device, claim namespace, claim name)


class AllocatedDeviceQuerySet(models.QuerySet["AllocatedDevice"]):
    def holders_of(self, keys: Iterable[DeviceKey]) -> list[Holder]:
        """The claims that hold any of ``keys`` exclusively (not through admin access, not a
        share of consumable capacity): the one "who else holds these devices" query."""
        wanted = set(keys)
        if not wanted:
            return []
        rows = self.filter(
            admin_access=False, share_id="", device_name__in={key[2] for key in wanted}
        ).values_list("driver", "pool", "device_name", "claim__namespace", "claim__name")
        return [row for row in rows if row[:3] in wanted]


class AllocatedDevice(models.Model):
    """One ``status.allocation.devices.results`` entry of a claim.

    ``driver``/``pool``/``device_name`` are the result as written; ``device`` links the mirrored
    device they name, kept by the mirror (null while the device's slice is not mirrored, e.g. a
    claim that arrives before its slice, or a slice being re-created).
    """

    claim = models.ForeignKey(
        ResourceClaim, on_delete=models.CASCADE, related_name="allocated_devices"
    )
    request = models.CharField(max_length=130)  # "<request>" or "<request>/<subrequest>"
    # The class the claim's spec asks for in that (sub)request ("" when the spec does not
    # name one): what the tenant's usage counters count the result under.
    device_class_name = models.CharField(max_length=253, blank=True, default="")
    driver = models.CharField(max_length=63)
    pool = models.CharField(max_length=253)
    device_name = models.CharField(max_length=63)
    device = models.ForeignKey(
        Device, null=True, blank=True, on_delete=models.SET_NULL, related_name="allocations"
    )
    admin_access = models.BooleanField(default=False)
    share_id = models.CharField(max_length=64, blank=True)
    consumed_capacity = models.JSONField(null=True, blank=True)

    objects = AllocatedDeviceQuerySet.as_manager()

    class Meta:
        ordering = ["claim", "id"]
        indexes = [models.Index(fields=["driver", "pool", "device_name"])]

    def __str__(self) -> str:
        return f"{self.claim}: {self.pool}/{self.device_name}"

    @property
    def holds_device(self) -> bool:
        """Whether the result holds its device (admin-access results only observe it)."""
        return not self.admin_access


class ClaimConsumer(models.Model):
    """One ``status.reservedFor`` entry: who uses the claim (normally a pod)."""

    claim = models.ForeignKey(ResourceClaim, on_delete=models.CASCADE, related_name="consumers")
    api_group = models.CharField(max_length=253, blank=True)
    resource = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=64)

    class Meta:
        ordering = ["claim", "name"]

    def __str__(self) -> str:
        return f"{self.resource}/{self.name}"
