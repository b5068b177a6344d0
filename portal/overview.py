"""What the dashboard says about the cluster.

Until the cluster mirror has data this answers ``None`` and the dashboard says that no
cluster is connected yet.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Q

from claims.models import ResourceClaim
from devices.models import Device, DeviceState, Node
from mirror.models import MirrorStatus

__all__ = ["cluster_overview"]


def cluster_overview(user: AbstractBaseUser | AnonymousUser) -> dict[str, Any] | None:
    """Nodes, whole GPUs by model, device states and the user's claims, or ``None`` while the
    mirror holds neither nodes nor devices. A fixed handful of queries; device states come from
    the column the mirror keeps, so free + shared + allocated + blocked + tainted = devices.
    ``stale_mirror``: the kinds the mirror has not heard from for too long (their rows may be
    out of date), for the dashboard's warning."""
    node_count = Node.objects.count()
    devices = Device.objects.visible_to(user)
    states = devices.aggregate(
        total=Count("pk"),
        free=Count("pk", filter=Q(state=DeviceState.FREE)),
        allocated=Count("pk", filter=Q(state=DeviceState.ALLOCATED)),
        shared=Count("pk", filter=Q(state=DeviceState.SHARED)),
        blocked=Count("pk", filter=Q(state=DeviceState.BLOCKED)),
        tainted=Count("pk", filter=Q(state=DeviceState.TAINTED)),
    )
    if not node_count and not states["total"]:
        return None
    gpus = list(
        devices.filter(parent_uuid="")
        .exclude(model_name="")
        .order_by()
        .values("model_name")
        .annotate(count=Count("pk"))
        .order_by("-count", "model_name")
    )
    claims = ResourceClaim.objects.visible_to(user).aggregate(
        total=Count("pk"),
        pending=Count("pk", filter=Q(is_allocated=False)),
        allocated=Count("pk", filter=Q(is_allocated=True)),
    )
    return {
        "node_count": node_count,
        "ready_count": Node.objects.filter(is_ready=True).count(),
        "device_count": states["total"],
        "gpus": gpus,
        "free_count": states["free"],
        "allocated_count": states["allocated"],
        "shared_count": states["shared"],
        "blocked_count": states["blocked"],
        "tainted_count": states["tainted"],
        "claims": claims,
        "stale_mirror": list(MirrorStatus.objects.stale().only("kind", "last_seen_at")),
    }
