"""What the dashboard says about the cluster.

Until the cluster mirror has data this answers ``None`` and the dashboard says that no
cluster is connected yet.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.models import AnonymousUser, User
from django.core.cache import cache
from django.db.models import Avg, Count, Exists, Max, OuterRef, Q
from django.urls import reverse
from django.utils import timezone

from claims.models import ResourceClaim
from claims.usage.idle import idle_claim_count
from devices.models import (
    Device,
    DeviceClassMatch,
    DeviceState,
    DeviceTelemetry,
    InventoryChange,
    Node,
    TelemetrySource,
)
from devices.telemetry.reads import STALE_AFTER
from kube.kinds import Kind
from mirror.models import MirrorStatus

__all__ = ["cluster_overview"]


def _gpus_by_model(dra_gpus: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``[{"model_name", "count", "url"}]`` of the whole GPUs DRA drivers publish and of those
    device plugins advertise as node extended resources (legacy nodes DRA does not manage),
    most numerous first: the same GPUs the node list counts per node. DRA models link to their
    devices; device-plugin models, which have no device rows, to the node list."""
    counts: Counter[str] = Counter({gpu["model_name"]: gpu["count"] for gpu in dra_gpus})
    dra_models = set(counts)
    for gpus in Node.objects.device_plugin_gpus().values():
        for model, count in gpus:
            counts[model] += count
    devices, nodes = reverse("device-list"), reverse("node-list")
    return [
        {
            "model_name": model,
            "count": count,
            "url": f"{devices}?{urlencode({'model': model})}" if model in dra_models else nodes,
        }
        for model, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]


def cluster_overview(user: User | AnonymousUser) -> dict[str, Any] | None:
    """Nodes, whole GPUs by model, device states and the user's claims, or ``None`` while the
    mirror holds neither nodes nor devices. A fixed handful of queries; device states come from
    the column the mirror keeps, so free + shared + allocated + blocked + tainted = devices.
    ``stale_mirror``: the kinds the mirror has not heard from for too long (their rows may be
    out of date), for the dashboard's warning."""
    if not user.is_authenticated:
        return None
    inventory = _inventory_counts()
    node_count, states = inventory["node_count"], inventory["states"]
    if not node_count and not states["total"]:
        return None
    gpus = _gpus_by_model(inventory["models"])
    claims = _claim_counts(user)
    claims["idle"] = idle_claim_count(user)
    return {
        "node_count": node_count,
        "ready_count": inventory["ready_count"],
        "device_count": states["total"],
        "gpus": gpus,
        "free_count": states["free"],
        "allocated_count": states["allocated"],
        "shared_count": states["shared"],
        "blocked_count": states["blocked"],
        "tainted_count": states["tainted"],
        "claims": claims,
        "classes": _devices_by_class(),
        "stale_mirror": list(MirrorStatus.objects.stale().only("kind", "last_seen_at")),
        "mirror": MirrorStatus.objects.aggregate(kinds=Count("pk"), last_seen=Max("last_seen_at")),
        "telemetry": _telemetry(),
    }


# Counts over every device and claim (tens of thousands of rows at 5,000 nodes) are kept until
# the mirror changes what they count: the inventory change log's newest id moves with every
# pool whose slices or allocations change and every node change; the claims' mirrored
# resourceVersion with every claim batch. The timeout only bounds a missed change.
COUNTS_SECONDS = 60


def _inventory_counts() -> dict[str, Any]:
    """Nodes (and ready ones), device states and whole GPUs by model: the same for every signed-in
    user (inventory is not tenant data). Three queries when the inventory changed, else one."""
    version = InventoryChange.objects.aggregate(newest=Max("pk"))["newest"]
    key = f"dashboard:inventory:{version}"
    found = cache.get(key)
    if found is None:
        devices = Device.objects.all()
        states = devices.aggregate(
            total=Count("pk"),
            free=Count("pk", filter=Q(state=DeviceState.FREE)),
            allocated=Count("pk", filter=Q(state=DeviceState.ALLOCATED)),
            shared=Count("pk", filter=Q(state=DeviceState.SHARED)),
            blocked=Count("pk", filter=Q(state=DeviceState.BLOCKED)),
            tainted=Count("pk", filter=Q(state=DeviceState.TAINTED)),
        )
        nodes = Node.objects.aggregate(
            total=Count("pk"), ready=Count("pk", filter=Q(is_ready=True))
        )
        models = list(
            devices.filter(parent_uuid="")
            .exclude(model_name="")
            .order_by()
            .values("model_name")
            .annotate(count=Count("pk"))
        )
        found = {
            "node_count": nodes["total"],
            "ready_count": nodes["ready"],
            "states": states,
            "models": models,
        }
        cache.set(key, found, COUNTS_SECONDS)
    return found


def _claim_counts(user: User) -> dict[str, int]:
    """The claims ``user`` may see: all, pending, allocated. Kept per user until the mirrored
    claims change (their resourceVersion) or ``COUNTS_SECONDS`` pass (memberships change)."""
    version = (
        MirrorStatus.objects.filter(kind=Kind.RESOURCE_CLAIMS.value)
        .values_list("resource_version", flat=True)
        .first()
    )
    key = f"dashboard:claims:{user.pk}:{version}"
    found = cache.get(key)
    if found is None:
        found = ResourceClaim.objects.visible_to(user).aggregate(
            total=Count("pk"),
            pending=Count("pk", filter=Q(is_allocated=False)),
            allocated=Count("pk", filter=Q(is_allocated=True)),
        )
        cache.set(key, found, COUNTS_SECONDS)
    return dict(found)


def _telemetry() -> dict[str, Any]:
    """Average GPU utilisation of the fresh readings (all, and of devices a claim holds), and
    the sources whose readings are stale. Two queries."""
    now = timezone.now()
    held = Device.objects.filter(
        driver=OuterRef("driver"),
        pool_name=OuterRef("pool_name"),
        name=OuterRef("device_name"),
        state__in=[DeviceState.ALLOCATED, DeviceState.SHARED],
    )
    fresh = DeviceTelemetry.objects.filter(sampled_at__gte=now - STALE_AFTER)
    readings = fresh.annotate(held=Exists(held)).aggregate(
        count=Count("pk"),
        average=Avg("gpu_util"),
        held_average=Avg("gpu_util", filter=Q(held=True)),
        simulated=Count("pk", filter=Q(is_simulated=True)),
    )
    sources = list(TelemetrySource.objects.filter(enabled=True))
    return {
        **readings,
        "has_sources": bool(sources),
        "sources": sources,
        "stale_sources": [source for source in sources if source.is_stale(now)],
        "last_success": max(
            (s.last_success_at for s in sources if s.last_success_at is not None), default=None
        ),
    }


# The per-class counts join every class match to its device (~100,000 rows at 5,000 nodes):
# kept this long, shared by every user (inventory is not tenant data).
CLASS_COUNTS_SECONDS = 30


def _devices_by_class() -> list[dict[str, Any]]:
    """``[{"name", "total", "free", "url"}]`` per device class with matching devices, most
    devices first: what each class's selectors accept and how much of it is free. Cached
    ``CLASS_COUNTS_SECONDS`` (one query when it is not)."""
    found = cache.get("dashboard:devices-by-class")
    if found is None:
        rows = (
            DeviceClassMatch.objects.values("device_class_name")
            .annotate(total=Count("pk"), free=Count("pk", filter=Q(device__state=DeviceState.FREE)))
            .order_by("-total", "device_class_name")
        )
        found = [
            {"name": row["device_class_name"], "total": row["total"], "free": row["free"]}
            for row in rows
        ]
        cache.set("dashboard:devices-by-class", found, CLASS_COUNTS_SECONDS)
    return [{**row, "url": reverse("deviceclass-detail", args=[row["name"]])} for row in found]
