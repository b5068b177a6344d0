"""Helpers of the idle-claim tests: a claim's consumers changed in the API emulator (then
mirrored), and a claim's utilisation written as the usage rollups the sweep reads."""

from __future__ import annotations

import datetime

from claims.models import ResourceClaim, UsageRollup
from devices.models import Resolution
from kube.kinds import Kind

FIVE = datetime.timedelta(minutes=5)
# team-a's claim (namespace gpu-test1) and another tenant-less one, both used by one pod.
TEAM_A_CLAIM = ("gpu-test1", "pod1-gpu-nscrq")
OTHER_CLAIM = ("gpu-test1", "pod2-gpu-vkpsr")
ADMIN_ACCESS_CLAIM = ("admin-access", "pod0-admin-gpu-z7wjx")


def set_consumers(live, claim: tuple[str, str], pods: list[str], *, mirror: bool = True) -> None:
    """Writes ``status.reservedFor`` of the claim in the API server (pods by name), and lets
    the mirror catch up unless ``mirror`` is False (a mirror that lags)."""
    _, cluster, resync = live
    namespace, name = claim
    reserved = [{"resource": "pods", "name": pod, "uid": f"uid-{pod}"} for pod in pods]
    cluster.patch_status(
        Kind.RESOURCE_CLAIMS,
        name,
        {"status": {"reservedFor": reserved or None}},
        namespace=namespace,
    )
    if mirror:
        resync()


def mirrored(claim: tuple[str, str]) -> ResourceClaim:
    return ResourceClaim.objects.get(namespace=claim[0], name=claim[1])


def utilisation(
    claim: tuple[str, str],
    values: list[float],
    *,
    now: datetime.datetime,
) -> None:
    """5-minute claim rollups ending at ``now``: ``values`` oldest first, one per bucket."""
    row = mirrored(claim)
    start = now - FIVE * len(values)
    UsageRollup.objects.bulk_create(
        UsageRollup(
            scope=UsageRollup.Scope.CLAIM,
            key=row.uid,
            namespace=row.namespace,
            claim_name=row.name,
            tenant=row.tenant,
            resolution=Resolution.FIVE_MINUTES,
            bucket_start=start + FIVE * i,
            device_seconds=300.0,
            gpu_util_avg=value,
        )
        for i, value in enumerate(values)
    )
