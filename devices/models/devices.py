"""Device: one entry of a ResourceSlice's ``spec.devices``, with columns to filter and join on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Self, cast

from django.db import models
from django.db.models import Count, Prefetch, Q
from django.urls import reverse

from devices.models.mirror import NamespacedQuerySet
from devices.models.resource_slices import ResourceSlice
from toolkit.querysets import VisibleQuerySet

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

__all__ = ["Device", "DeviceQuerySet", "DeviceState"]


class DeviceState(models.TextChoices):
    FREE = "free", "Free"
    ALLOCATED = "allocated", "Allocated"
    SHARED = "shared", "Shared"
    BLOCKED = "blocked", "Blocked"
    TAINTED = "tainted", "Tainted"


class DeviceQuerySet(VisibleQuerySet["Device"]):
    def visible_to_member(self, user: User) -> Self:
        """Inventory is visible to every signed-in user; who holds a device is gated per claim."""
        return self.all()

    def by_natural_key(self, driver: str, pool: str, name: str) -> DeviceQuerySet:
        """The device ``name`` of ``driver``'s ``pool``: its stable identity, which survives its
        slice being deleted and re-created (the row and its id do not). While a pool is being
        republished the name may briefly sit in two slices; the newest generation comes first."""
        return self.filter(driver=driver, pool_name=pool, name=name).order_by(
            "-resource_slice__pool_generation", "-pk"
        )

    def allocated(self) -> DeviceQuerySet:
        """Devices an allocation result holds (dedicated or shared); admin access holds nothing.

        Through the reverse relation ``allocations`` (kept by the mirror), so that this app
        does not import the claims app above it."""
        held = Device.objects.filter(allocations__admin_access=False).values("pk")
        return self.filter(pk__in=held)

    def free(self) -> DeviceQuerySet:
        return self.in_state(DeviceState.FREE)

    def held(self) -> DeviceQuerySet:
        """Devices whose badge says a claim holds them (allocated or shared, not tainted):
        the stored ``state``, so counts by state add up to the total."""
        return self.filter(state__in=[DeviceState.ALLOCATED, DeviceState.SHARED])

    def tainted(self) -> DeviceQuerySet:
        return self.in_state(DeviceState.TAINTED)

    def in_state(self, state: str) -> DeviceQuerySet:
        """Devices whose badge shows ``state``: the ``state`` column the mirror keeps, the one
        definition every count by state (node list, device classes, dashboard) uses."""
        return self.filter(state=DeviceState(state))

    def count_by_state(self) -> dict[str, int]:
        """``{"total": n, "free": n, "allocated": n, ...}`` over every state, in one query."""
        counts = self.order_by().aggregate(
            total=Count("pk"),
            **{state.value: Count("pk", filter=Q(state=state)) for state in DeviceState},
        )
        return {name: value or 0 for name, value in counts.items()}

    def whole(self) -> DeviceQuerySet:
        """Devices that are not partitions of another (MIG placements have a parent)."""
        return self.filter(parent_uuid="")

    def gpu_models(self) -> list[tuple[str, int]]:
        """[(model, count)] of whole devices with a model name, most numerous first."""
        rows = (
            self.whole()
            .exclude(model_name="")
            .order_by()
            .values("model_name")
            .annotate(n=Count("pk"))
            .order_by("-n", "model_name")
        )
        return [(row["model_name"], row["n"]) for row in rows]

    def on_node(self, node_name: str) -> DeviceQuerySet:
        return self.filter(node_name=node_name)

    def with_holders(self, user: User | AnonymousUser, *, consumers: bool = True) -> DeviceQuerySet:
        """Prefetches every device's allocation results (``allocations``) and, of their claims,
        only those ``user`` may see, through the claims' own ``visible_to`` gate, as
        ``result.visible_claim``: ``None`` for a claim in another tenant, which can then only
        be shown anonymously.
        Three queries whatever the number of devices (results, visible claims, consumers);
        two with ``consumers=False``, for pages that do not list the claims' pods.

        The claim models are reached through the relation, as this app does not import the
        claims app above it."""
        results = Device.allocations.rel.related_model
        claims = results._meta.get_field("claim").related_model
        assert claims is not None  # a foreign key's
        # The claim model's manager (its only one) makes NamespacedQuerySets.
        gate = cast(NamespacedQuerySet, claims._default_manager.get_queryset())
        visible = gate.visible_to(user).only("pk", "namespace", "name")
        return self.prefetch_related(
            Prefetch(
                "allocations", queryset=results._default_manager.order_by("admin_access", "pk")
            ),
            Prefetch(
                "allocations__claim",
                queryset=visible.prefetch_related("consumers") if consumers else visible,
                to_attr="visible_claim",
            ),
        )


class Device(models.Model):
    resource_slice = models.ForeignKey(
        ResourceSlice, on_delete=models.CASCADE, related_name="devices"
    )
    driver = models.CharField(max_length=63)
    pool_name = models.CharField(max_length=253)
    name = models.CharField(max_length=63)
    # The node the device is reachable from: the slice's nodeName or the device's own; blank
    # for devices offered to many nodes (nodeSelector / allNodes).
    node_name = models.CharField(max_length=253, blank=True, db_index=True)
    attributes = models.JSONField(default=dict, blank=True)
    capacity = models.JSONField(default=dict, blank=True)
    consumes_counters = models.JSONField(default=list, blank=True)
    taints = models.JSONField(default=list, blank=True)
    is_tainted = models.BooleanField(default=False)
    # Kept by the mirror (mirror.states) from taints and the claims' allocation results.
    state = models.CharField(
        max_length=20,
        choices=DeviceState.choices,
        default=DeviceState.FREE,
        db_default=DeviceState.FREE,
    )
    # Why the device is in its state, in words ("held by team-a-dev/train-0", "counters used by
    # gpu-0-mig-1g.5gb-0, ...", "2 of 8 shares' capacity used"); blank when free.
    state_reason = models.CharField(max_length=500, blank=True, default="", db_default="")
    allow_multiple_allocations = models.BooleanField(default=False)
    # Derived from well-known attributes for filtering and display.
    device_type = models.CharField(max_length=63, blank=True)  # gpu, mig, channel, ...
    model_name = models.CharField(max_length=200, blank=True)
    uuid = models.CharField(max_length=100, blank=True, db_index=True)
    parent_uuid = models.CharField(max_length=100, blank=True)
    pci_bus_id = models.CharField(max_length=32, blank=True)
    pcie_root = models.CharField(max_length=64, blank=True)
    memory_bytes = models.BigIntegerField(null=True, blank=True)
    raw = models.JSONField()

    objects = DeviceQuerySet.as_manager()

    class Meta:
        ordering = ["node_name", "driver", "pool_name", "name"]
        constraints = [
            # Upserts key on it; a slice listing a name twice is flagged and keeps the first.
            models.UniqueConstraint(fields=["resource_slice", "name"], name="one_device_per_slice")
        ]
        indexes = [
            # The device list's order, ending in the key: the list finds a page's keys with an
            # index-only scan (see toolkit.htmx.KeyFirstPaginator), not a sort of all rows.
            models.Index(
                fields=["node_name", "driver", "pool_name", "name", "id"], name="device_list_order"
            ),
            models.Index(fields=["driver", "pool_name", "name"]),
            models.Index(fields=["model_name", "node_name"]),
            # The list filtered by state in the list's order, key last (free devices sit at
            # the end of the node order at scale); also every count and filter by state.
            models.Index(fields=["state", "node_name", "driver", "pool_name", "name", "id"]),
            # Devices of a model in a state (the list's model filter, its count, GPUs by model):
            # counted from the index alone, not the wide rows (36,000 allocated H100s: 147 →
            # 23 ms). Its model prefix serves lookups by model alone.
            models.Index(fields=["model_name", "state"], name="device_model_state"),
        ]

    def __str__(self) -> str:
        return f"{self.pool_name}/{self.name}"

    def get_absolute_url(self) -> str:
        return reverse("device-detail", kwargs=self.natural_key_kwargs)

    @property
    def natural_key_kwargs(self) -> dict[str, str]:
        """How pages and the API address a device: ``(driver, pool, device)``, stable across
        its slice being re-created; the integer id is an internal key only."""
        return {"driver": self.driver, "pool": self.pool_name, "device": self.name}
