"""Who shares what: claims several pods use, devices several claims hold (consumable capacity),
time-slicing / MPS settings from the claims' opaque config, and admin-access observers.

Every list goes through ``ResourceClaim.objects.visible_to(user)`` (a tenant's members see
their tenants' claims, portal admins all); a device's holders in other tenants are counted,
never named (as on the device page).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Count, Prefetch, Q, QuerySet
from django.urls import reverse

from claims.models import AllocatedDevice, ResourceClaim
from devices.models import Device

__all__ = [
    "SHARING_TABS",
    "SharingSetting",
    "admin_observers",
    "claims_with_several_consumers",
    "claims_with_sharing_config",
    "devices_with_several_allocations",
    "device_url",
    "sharing_settings",
]

# (tab, label): the sharing page's lists.
SHARING_TABS = [
    ("pods", "Claims used by several pods"),
    ("devices", "Devices held by several claims"),
    ("configs", "Time-slicing and MPS"),
    ("observers", "Admin-access observers"),
]
_DEFERRED = ("raw", "attributes", "capacity", "consumes_counters", "taints")
# The opaque parameters' field that holds each strategy's settings (NVIDIA's GpuConfig, and
# the dra-example-driver's, which adds space partitioning).
_STRATEGY_FIELDS = {
    "TimeSlicing": "timeSlicingConfig",
    "MPS": "mpsConfig",
    "SpacePartitioning": "spacePartitioningConfig",
}


@dataclass
class SharingSetting:
    """One opaque config entry that sets a sharing strategy."""

    driver: str
    kind: str  # the parameters' kind (GpuConfig, MigDeviceConfig, ...)
    strategy: str  # TimeSlicing, MPS, ...
    settings: list[tuple[str, str]]  # the strategy's own fields, as written
    requests: list[str]  # empty: every request of the claim
    source: str  # FromClaim / FromClass (allocated claims), "" from the spec
    devices: list[AllocatedDevice] = field(default_factory=list)


def device_url(result: AllocatedDevice) -> str:
    """The page of the device an allocation result names (by its stable identity)."""
    return reverse(
        "device-detail",
        kwargs={"driver": result.driver, "pool": result.pool, "device": result.device_name},
    )


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(value, dict):
        rows: list[tuple[str, str]] = []
        for key, item in sorted(value.items()):
            rows += _flatten(item, f"{prefix}{key}.")
        return rows
    return [(prefix.rstrip("."), str(value))]


def _for_request(result: AllocatedDevice, requests: list[str]) -> bool:
    """Whether a config for ``requests`` (empty: all) applies to the result's request, or to
    the ``firstAvailable`` alternative it was allocated for (``request/alternative``)."""
    name = result.request.split("/", 1)[0]
    return not requests or result.request in requests or name in requests


def sharing_settings(claim: ResourceClaim) -> list[SharingSetting]:
    """The sharing strategies the claim's config sets, each with the devices it applies to
    (``allocated_devices`` prefetched or not). The allocation's config when allocated (it
    includes the device classes' config); the spec's otherwise."""
    allocation = (claim.status.get("allocation") or {}).get("devices") or {}
    configs = allocation.get("config") if claim.is_allocated else None
    if not isinstance(configs, list):
        configs = (claim.spec.get("devices") or {}).get("config") or []
    results = [r for r in claim.allocated_devices.all() if not r.admin_access]
    found = []
    for entry in configs:
        if not isinstance(entry, dict):
            continue
        opaque = entry.get("opaque") or {}
        parameters = opaque.get("parameters") if isinstance(opaque, dict) else None
        sharing = parameters.get("sharing") if isinstance(parameters, dict) else None
        if not isinstance(sharing, dict) or not sharing.get("strategy"):
            continue
        strategy = str(sharing["strategy"])
        details = sharing.get(_STRATEGY_FIELDS.get(strategy, ""))
        if details is None:
            details = {k: v for k, v in sharing.items() if k != "strategy"}
        requests = [str(r) for r in entry.get("requests") or []]
        found.append(
            SharingSetting(
                driver=str(opaque.get("driver", "")),
                kind=str(parameters.get("kind", "")) if isinstance(parameters, dict) else "",
                strategy=strategy,
                settings=_flatten(details),
                requests=requests,
                source=str(entry.get("source", "")),
                devices=[r for r in results if _for_request(r, requests)],
            )
        )
    return found


def claims_with_several_consumers(
    user: User | AnonymousUser,
) -> QuerySet[ResourceClaim]:
    """Visible claims whose ``reservedFor`` names more than one consumer (a claim shared by
    pods), with their consumers and results prefetched."""
    return (
        ResourceClaim.objects.visible_to(user)
        .filter(consumer_count__gt=1)
        .order_by("namespace", "name")
        .prefetch_related("consumers", "allocated_devices")
    )


def devices_with_several_allocations(
    user: User | AnonymousUser,
) -> QuerySet[Device]:
    """Devices that more than one allocation result holds (admin access holds nothing):
    consumable-capacity shares, each with its claim as ``user`` may see it."""
    several = (
        AllocatedDevice.objects.filter(admin_access=False, device__isnull=False)
        .order_by()
        .values("device")
        .annotate(holders=Count("pk"))
        .filter(holders__gt=1)
        .values("device")
    )
    return (
        Device.objects.visible_to(user)
        .filter(pk__in=several)
        .defer(*_DEFERRED)
        .order_by("node_name", "driver", "pool_name", "name")
        .with_holders(user, consumers=False)
    )


def claims_with_sharing_config(user: User | AnonymousUser) -> QuerySet[ResourceClaim]:
    """Visible claims whose config (their own, or their allocation's, which includes the
    classes') mentions sharing settings; ``sharing_settings`` reads them."""
    mentions = Q(raw__spec__devices__config__icontains="strategy") | Q(
        raw__status__allocation__devices__config__icontains="strategy"
    )
    return (
        ResourceClaim.objects.visible_to(user)
        .filter(mentions)
        .order_by("namespace", "name")
        .prefetch_related("allocated_devices")
    )


def admin_observers(user: User | AnonymousUser) -> QuerySet[ResourceClaim]:
    """Visible claims with admin access to devices (they observe, never hold), with the
    observed results as ``observed`` and their consumers prefetched."""
    observed = AllocatedDevice.objects.filter(admin_access=True).order_by("driver", "pool", "pk")
    return (
        ResourceClaim.objects.visible_to(user)
        .filter(pk__in=AllocatedDevice.objects.filter(admin_access=True).values("claim"))
        .order_by("namespace", "name")
        .prefetch_related(
            "consumers", Prefetch("allocated_devices", queryset=observed, to_attr="observed")
        )
    )
